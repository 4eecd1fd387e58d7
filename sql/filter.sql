--
-- filter: message filters of consumer groups (src/filter.c), through
-- mq.filter_match, checked against RocketMQ's own test expectations:
--   filter/src/test/java/org/apache/rocketmq/filter/ExpressionTest.java
--   filter/src/test/java/org/apache/rocketmq/filter/ParserTest.java
--   remoting/src/test/java/org/apache/rocketmq/remoting/protocol/filter/FilterAPITest.java
-- RocketMQ's eval(expr, context, expected) passes when the result equals
-- "expected", or when the result is NULL (or not a boolean) and expected is
-- FALSE.  Each row prints what we compute ("got", three-valued) and
-- whether RocketMQ's test accepts it ("rocketmq_ok").  Java Integer and
-- Double values of a test context are JSON numbers, Strings JSON strings,
-- new Object() a JSON object.
--

-- the outcome of one call as text: t, f, null, or the error with its
-- SQLSTATE and detail (which says the position)
CREATE FUNCTION ft_try(filter_type text, expr text, headers jsonb DEFAULT '{}',
					   tag text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	d text;
BEGIN
	RETURN coalesce(mq.filter_match(filter_type, expr, headers, tag)::text, 'null');
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
	RETURN SQLSTATE || ' ' || SQLERRM || coalesce(' / ' || d, '');
END $$;

CREATE TEMP TABLE rmq_cases (n serial, test text, expr text, headers jsonb,
							 tag text, expected boolean);

------------------------------------------------------------------------
-- ExpressionTest: contains / startswith / endswith
------------------------------------------------------------------------
INSERT INTO rmq_cases (test, expr, headers, expected) VALUES
  ('testContains_StartsWith_EndsWith_has', 'value contains ''x''', '{"value":"axb"}', true),
  ('testContains_StartsWith_EndsWith_has', 'value startswith ''ax''', '{"value":"axb"}', true),
  ('testContains_StartsWith_EndsWith_has', 'value endswith ''xb''', '{"value":"axb"}', true),
  ('test_notContains_notStartsWith_notEndsWith_has', 'value not contains ''x''', '{"value":"axb"}', false),
  ('test_notContains_notStartsWith_notEndsWith_has', 'value not startswith ''ax''', '{"value":"axb"}', false),
  ('test_notContains_notStartsWith_notEndsWith_has', 'value not endswith ''xb''', '{"value":"axb"}', false),
  ('testContains_StartsWith_EndsWith_has_not', 'value contains ''x''', '{"value":"abb"}', false),
  ('testContains_StartsWith_EndsWith_has_not', 'value startswith ''x''', '{"value":"abb"}', false),
  ('testContains_StartsWith_EndsWith_has_not', 'value endswith ''x''', '{"value":"abb"}', false),
  ('test_notContains_notStartsWith_notEndsWith_has_not', 'value not contains ''x''', '{"value":"abb"}', true),
  ('test_notContains_notStartsWith_notEndsWith_has_not', 'value not startswith ''x''', '{"value":"abb"}', true),
  ('test_notContains_notStartsWith_notEndsWith_has_not', 'value not endswith ''x''', '{"value":"abb"}', true),
  ('testContains_StartsWith_EndsWith_hasEmpty', 'value contains ''''', '{"value":"axb"}', false),
  ('testContains_StartsWith_EndsWith_hasEmpty', 'value startswith ''''', '{"value":"axb"}', false),
  ('testContains_StartsWith_EndsWith_hasEmpty', 'value endswith ''''', '{"value":"axb"}', false),
  ('test_notContains_notStartsWith_notEndsWith_hasEmpty', 'value not contains ''''', '{"value":"axb"}', false),
  ('test_notContains_notStartsWith_notEndsWith_hasEmpty', 'value not startswith ''''', '{"value":"axb"}', false),
  ('test_notContains_notStartsWith_notEndsWith_hasEmpty', 'value not endswith ''''', '{"value":"axb"}', false),
  ('testContains_StartsWith_EndsWith_null_has_1', 'value contains ''x''', '{"value":null}', false),
  ('testContains_StartsWith_EndsWith_null_has_1', 'value startswith ''x''', '{"value":null}', false),
  ('testContains_StartsWith_EndsWith_null_has_1', 'value endswith ''x''', '{"value":null}', false),
  ('test_notContains_notStartsWith_notEndsWith_null_has_1', 'value not contains ''x''', '{"value":null}', false),
  ('test_notContains_notStartsWith_notEndsWith_null_has_1', 'value not startswith ''x''', '{"value":null}', false),
  ('test_notContains_notStartsWith_notEndsWith_null_has_1', 'value not endswith ''x''', '{"value":null}', false),
  ('testContains_StartsWith_EndsWith_null_has_2', 'value contains ''x''', '{}', false),
  ('testContains_StartsWith_EndsWith_null_has_2', 'value startswith ''x''', '{}', false),
  ('testContains_StartsWith_EndsWith_null_has_2', 'value endswith ''x''', '{}', false),
  ('test_notContains_notStartsWith_notEndsWith_null_has_2', 'value not contains ''x''', '{}', false),
  ('test_notContains_notStartsWith_notEndsWith_null_has_2', 'value not startswith ''x''', '{}', false),
  ('test_notContains_notStartsWith_notEndsWith_null_has_2', 'value not endswith ''x''', '{}', false),
  ('testContains_StartsWith_EndsWith_number_has', 'value contains ''x''', '{"value":1.23}', false),
  ('testContains_StartsWith_EndsWith_number_has', 'value startswith ''x''', '{"value":1.23}', false),
  ('testContains_StartsWith_EndsWith_number_has', 'value endswith ''x''', '{"value":1.23}', false),
  ('test_notContains_notStartsWith_notEndsWith_number_has', 'value not contains ''x''', '{"value":1.23}', false),
  ('test_notContains_notStartsWith_notEndsWith_number_has', 'value not startswith ''x''', '{"value":1.23}', false),
  ('test_notContains_notStartsWith_notEndsWith_number_has', 'value not endswith ''x''', '{"value":1.23}', false),
  ('testContains_StartsWith_EndsWith_boolean_has', 'value contains ''x''', '{"value":true}', false),
  ('testContains_StartsWith_EndsWith_boolean_has', 'value startswith ''x''', '{"value":true}', false),
  ('testContains_StartsWith_EndsWith_boolean_has', 'value endswith ''x''', '{"value":true}', false),
  ('test_notContains_notStartsWith_notEndsWith_boolean_has', 'value not contains ''x''', '{"value":true}', false),
  ('test_notContains_notStartsWith_notEndsWith_boolean_has', 'value not startswith ''x''', '{"value":true}', false),
  ('test_notContains_notStartsWith_notEndsWith_boolean_has', 'value not endswith ''x''', '{"value":true}', false),
  ('testContains_StartsWith_EndsWith_object_has', 'value contains ''x''', '{"value":{}}', false),
  ('testContains_StartsWith_EndsWith_object_has', 'value startswith ''x''', '{"value":{}}', false),
  ('testContains_StartsWith_EndsWith_object_has', 'value endswith ''x''', '{"value":{}}', false),
  ('testContains_StartsWith_EndsWith_string_has_string', '''axb'' contains ''x''', '{"whatever":"whatever"}', true),
  ('testContains_StartsWith_EndsWith_string_has_string', '''axb'' startswith ''ax''', '{"whatever":"whatever"}', true),
  ('testContains_StartsWith_EndsWith_string_has_string', '''axb'' endswith ''xb''', '{"whatever":"whatever"}', true),
  ('test_notContains_notStartsWith_notEndsWith_string_has_string', '''axb'' not contains ''x''', '{"whatever":"whatever"}', false),
  ('test_notContains_notStartsWith_notEndsWith_string_has_string', '''axb'' not startswith ''ax''', '{"whatever":"whatever"}', false),
  ('test_notContains_notStartsWith_notEndsWith_string_has_string', '''axb'' not endswith ''xb''', '{"whatever":"whatever"}', false),
  ('testContains_startsWith_endsWith_string_has_not_string', '''axb'' contains ''u''', '{"whatever":"whatever"}', false),
  ('testContains_startsWith_endsWith_string_has_not_string', '''axb'' startswith ''u''', '{"whatever":"whatever"}', false),
  ('testContains_startsWith_endsWith_string_has_not_string', '''axb'' endswith ''u''', '{"whatever":"whatever"}', false),
  ('test_notContains_notStartsWith_notEndsWith_string_has_not_string', '''axb'' not contains ''u''', '{"whatever":"whatever"}', true),
  ('test_notContains_notStartsWith_notEndsWith_string_has_not_string', '''axb'' not startswith ''u''', '{"whatever":"whatever"}', true),
  ('test_notContains_notStartsWith_notEndsWith_string_has_not_string', '''axb'' not endswith ''u''', '{"whatever":"whatever"}', true),
  ('testContains_StartsWith_EndsWith_string_has_empty', '''axb'' contains ''''', '{"whatever":"whatever"}', false),
  ('testContains_StartsWith_EndsWith_string_has_empty', '''axb'' startswith ''''', '{"whatever":"whatever"}', false),
  ('testContains_StartsWith_EndsWith_string_has_empty', '''axb'' endswith ''''', '{"whatever":"whatever"}', false),
  ('test_notContains_notStartsWith_notEndsWith_string_has_empty', '''axb'' not contains ''''', '{"whatever":"whatever"}', false),
  ('test_notContains_notStartsWith_notEndsWith_string_has_empty', '''axb'' not startswith ''''', '{"whatever":"whatever"}', false),
  ('test_notContains_notStartsWith_notEndsWith_string_has_empty', '''axb'' not endswith ''''', '{"whatever":"whatever"}', false),
  ('testContains_StartsWith_EndsWith_string_has_space', ''' '' contains '' ''', '{"whatever":"whatever"}', true),
  ('testContains_StartsWith_EndsWith_string_has_space', ''' '' startswith '' ''', '{"whatever":"whatever"}', true),
  ('testContains_StartsWith_EndsWith_string_has_space', ''' '' endswith '' ''', '{"whatever":"whatever"}', true),
  ('test_notContains_notStartsWith_notEndsWith_string_has_space', ''' '' not contains '' ''', '{"whatever":"whatever"}', false),
  ('test_notContains_notStartsWith_notEndsWith_string_has_space', ''' '' not startswith '' ''', '{"whatever":"whatever"}', false),
  ('test_notContains_notStartsWith_notEndsWith_string_has_space', ''' '' not endswith '' ''', '{"whatever":"whatever"}', false),
  ('testContains_StartsWith_EndsWith_string_has_special_1', '''axb'' contains ''.''', '{"whatever":"whatever"}', false),
  ('testContains_StartsWith_EndsWith_string_has_special_1', '''axb'' startswith ''.''', '{"whatever":"whatever"}', false),
  ('testContains_StartsWith_EndsWith_string_has_special_1', '''axb'' endswith ''.''', '{"whatever":"whatever"}', false),
  ('test_notContains_notStartsWith_notEndsWith_string_has_special_1', '''axb'' not contains ''.''', '{"whatever":"whatever"}', true),
  ('test_notContains_notStartsWith_notEndsWith_string_has_special_1', '''axb'' not startswith ''.''', '{"whatever":"whatever"}', true),
  ('test_notContains_notStartsWith_notEndsWith_string_has_special_1', '''axb'' not endswith ''.''', '{"whatever":"whatever"}', true),
  ('testContains_StartsWith_EndsWith_string_has_special_2', '''s'' contains ''\''', '{"whatever":"whatever"}', false),
  ('testContains_StartsWith_EndsWith_string_has_special_2', '''s'' startswith ''\''', '{"whatever":"whatever"}', false),
  ('testContains_StartsWith_EndsWith_string_has_special_2', '''s'' endswith ''\''', '{"whatever":"whatever"}', false),
  ('testContainsAllInOne', 'a not in (''4'', ''4'', ''5'') and b between 3 and 10 and c not contains ''axbc''', '{"a":"3","b":3,"c":"axbdc"}', true),
  ('testStartsWithAllInOne', 'a not in (''4'', ''4'', ''5'') and b between 3 and 10 and c not startswith ''axbc''', '{"a":"3","b":3,"c":"axbdc"}', true),
  ('testEndsWithAllInOne', 'a not in (''4'', ''4'', ''5'') and b between 3 and 10 and c not endswith ''axbc''', '{"a":"3","b":3,"c":"axbdc"}', true);

------------------------------------------------------------------------
-- ExpressionTest: testEvaluate_*
------------------------------------------------------------------------
INSERT INTO rmq_cases (test, expr, headers, tag, expected) VALUES
  -- TAGS is the message's tag (the tag argument): ''tag''
  ('testEvaluate_stringHasString', 'TAGS is not null and TAGS=''''''''''tag''''''''''', '{}', '''''tag''''', true),
  -- the test expects a RuntimeException from the second context on (two
  -- strings that are not numbers under BETWEEN); the later blocks say what
  -- was meant, and an exception is "not matched" here: NULL
  ('testEvaluate_stringCompare', 'a between up and low', '{"a":"3.14"}', NULL, false),
  ('testEvaluate_stringCompare', 'a between up and low', '{"a":"3.14","up":"up","low":"low"}', NULL, false),
  ('testEvaluate_stringCompare', 'key is not null and key between 0 and 100', '{"key":"con"}', NULL, false),
  ('testEvaluate_stringCompare', 'a between 0 and 100', '{"a":"abc"}', NULL, false),
  ('testEvaluate_stringCompare', 'a=b', '{"a":"3.14","b":"3.14"}', NULL, true),
  ('testEvaluate_stringCompare', 'a<>b', '{"a":"3.14","b":"3.14"}', NULL, false),
  ('testEvaluate_stringCompare', 'a<>b', '{"a":"3.14","b":"3.141"}', NULL, true),
  -- String.valueOf(3.1415 * Math.pow(10, 10)) is "3.1415E10"
  ('testEvaluate_exponent', 'a > 3.1E10', '{"a":"3.1415E10"}', NULL, true),
  ('testEvaluate_floatNumber', 'a > 3.14', '{"a":"3.1415"}', NULL, true),
  ('testEvaluate_twoVariable', 'a > b', '{"a":"10","b":"20"}', NULL, false),
  ('testEvaluate_twoVariableGt', 'a > b', '{"b":"10","a":"20"}', NULL, true),
  ('testEvaluate_nullOr', 'a is null OR a=''hello''', '{}', NULL, true),
  ('testEvaluate_nullOr', 'a is null OR a=''hello''', '{"a":"hello"}', NULL, true),
  ('testEvaluate_nullOr', 'a is null OR a=''hello''', '{"a":"abc"}', NULL, false),
  ('testEvaluate_boolean', 'a=TRUE OR b=FALSE', '{"a":"true","b":"false"}', NULL, true),
  ('testEvaluate_boolean', 'a=TRUE OR b=FALSE', '{"a":"false","b":"true"}', NULL, false),
  ('testEvaluate_equal', 'a is not null and a=''hello''', '{"a":"hello"}', NULL, true),
  ('testEvaluate_equal', 'a is not null and a=''hello''', '{}', NULL, false),
  ('testEvaluate_andTrue', 'a=3 and b<>4 And c>5 AND d<=4', '{"a":3,"b":5,"c":6,"d":1}', NULL, true),
  ('testEvaluate_andTrue', 'a=3 and b<>4 And c>5 AND d<=4', '{"a":"3","b":"5","c":"6","d":"1"}', NULL, true),
  ('testEvaluate_andFalse', 'a=3 and b<>4 And c>5 AND d<=4', '{"a":4,"b":5,"c":6,"d":1}', NULL, false),
  ('testEvaluate_andFalse', 'a=3 and b<>4 And c>5 AND d<=4', '{"a":"4","b":"5","c":"6","d":"1"}', NULL, false),
  ('testEvaluate_orTrue', 'a=3 or b<>4 Or c>5 OR d<=4', '{"a":3}', NULL, true),
  ('testEvaluate_orTrue', 'a=3 or b<>4 Or c>5 OR d<=4', '{"a":4,"b":5}', NULL, true),
  ('testEvaluate_orTrue', 'a=3 or b<>4 Or c>5 OR d<=4', '{"a":4,"b":4,"c":6}', NULL, true),
  ('testEvaluate_orTrue', 'a=3 or b<>4 Or c>5 OR d<=4', '{"a":4,"b":4,"c":3,"d":2}', NULL, true),
  ('testEvaluate_orFalse', 'a=3 or b<>4 Or c>5 OR d<=4', '{"a":4,"b":4,"c":3,"d":10}', NULL, false),
  ('testEvaluate_inTrue', 'a in (''3'', ''4'', ''5'')', '{"a":"3"}', NULL, true),
  ('testEvaluate_inTrue', 'a in (''3'', ''4'', ''5'')', '{"a":"4"}', NULL, true),
  ('testEvaluate_inTrue', 'a in (''3'', ''4'', ''5'')', '{"a":"5"}', NULL, true),
  ('testEvaluate_inFalse', 'a in (''3'', ''4'', ''5'')', '{"a":"8"}', NULL, false),
  ('testEvaluate_notInTrue', 'a not in (''3'', ''4'', ''5'')', '{"a":"8"}', NULL, true),
  ('testEvaluate_notInFalse', 'a not in (''3'', ''4'', ''5'')', '{"a":"3"}', NULL, false),
  ('testEvaluate_notInFalse', 'a not in (''3'', ''4'', ''5'')', '{"a":"4"}', NULL, false),
  ('testEvaluate_notInFalse', 'a not in (''3'', ''4'', ''5'')', '{"a":"5"}', NULL, false),
  ('testEvaluate_betweenTrue', 'a between 2 and 10', '{"a":"2"}', NULL, true),
  ('testEvaluate_betweenTrue', 'a between 2 and 10', '{"a":"10"}', NULL, true),
  ('testEvaluate_betweenTrue', 'a between 2 and 10', '{"a":"3"}', NULL, true),
  ('testEvaluate_betweenFalse', 'a between 2 and 10', '{"a":"1"}', NULL, false),
  ('testEvaluate_betweenFalse', 'a between 2 and 10', '{"a":"11"}', NULL, false),
  ('testEvaluate_notBetweenTrue', 'a not between 2 and 10', '{"a":"1"}', NULL, true),
  ('testEvaluate_notBetweenTrue', 'a not between 2 and 10', '{"a":"11"}', NULL, true),
  ('testEvaluate_notBetweenFalse', 'a not between 2 and 10', '{"a":"2"}', NULL, false),
  ('testEvaluate_notBetweenFalse', 'a not between 2 and 10', '{"a":"10"}', NULL, false),
  ('testEvaluate_notBetweenFalse', 'a not between 2 and 10', '{"a":"3"}', NULL, false),
  ('testEvaluate_isNullTrue', 'a is null', '{"abc":"2"}', NULL, true),
  ('testEvaluate_isNullFalse', 'a is null', '{"a":"2"}', NULL, false),
  ('testEvaluate_isNotNullTrue', 'a is not null', '{"a":"2"}', NULL, true),
  ('testEvaluate_isNotNullFalse', 'a is not null', '{"abc":"2"}', NULL, false);

SELECT n, test, expr, headers, tag,
	   ft_try('sql92', expr, headers, tag) AS got,
	   coalesce(mq.filter_match('sql92', expr, headers, tag), false) = expected
		 AS rocketmq_ok
  FROM rmq_cases ORDER BY n;

-- every case must agree with RocketMQ's test
SELECT count(*) AS cases,
	   count(*) FILTER (WHERE coalesce(mq.filter_match('sql92', expr, headers, tag), false)
						IS DISTINCT FROM expected) AS disagreeing
  FROM rmq_cases;

-- ExpressionTest cases whose expression must not parse (the tests swallow
-- the exception): testContains_has_not_string_1/_2,
-- test_notContains_has_not_string_1/_2, testContains_string_has_nothing,
-- test_notContains_string_has_nothing
SELECT e, ft_try('sql92', e, '{"value":"axb"}') AS got
  FROM (VALUES ('value contains x'), ('value not contains x'),
			   ('value contains 123'), ('value not contains 123'),
			   ('''axb'' contains '), ('''axb'' not contains ')) v(e);

-- testEvaluate_now builds "a <= NOW" without the parser: NOW is not in
-- the grammar, so "now" is a property (ParserTest's nowExpression)
SELECT ft_try('sql92', 'a <= now', '{"a": 1, "now": 2}') AS now_is_a_property;

------------------------------------------------------------------------
-- ParserTest
------------------------------------------------------------------------
-- testParse_valid: all of these parse (an empty message: NULL or f)
SELECT e, ft_try('sql92', e) AS got
  FROM (VALUES ('a=3 and b<>4 And c>5 AND d<=4'),
			   ('a=3 or b<>4 Or c>5 OR d<=4'),
			   ('a in (''3'', ''4'', ''5'')'),
			   ('(a not in (''6'', ''4'', ''5'')) or (b in (''3'', ''4'', ''5''))'),
			   ('(a between 2 and 10) AND (b not between 6 and 9)'),
			   ('a is null'), ('a is not null'), ('a <= now'),
			   ('a=3 and b contains ''xxx'' and c not contains ''xxx''')) v(e);
-- testParse_invalid, testParse_decimalOverFlow, testParse_floatOverFlow
-- (a 209,000-digit number), testParse_illegalBetween
SELECT left(e, 40) AS e, ft_try('sql92', e) AS got
  FROM (VALUES ('a and between 2 and 10'),
			   ('a > 100000000000000000000000'),
			   ('a > 1' || repeat('111111111111111111111111111111111111111111111111111', 2048)
				|| '.' || repeat('111111111111111111111111111111111111111111111111111', 2048)),
			   (' a between 10 and 0')) v(e);
-- testEquals compares parse trees: blanks do not matter, OR is not AND
SELECT bool_and(mq.filter_match('sql92', 'a=3 and b<>4 And c>5 AND d<=4', h)
				IS NOT DISTINCT FROM
				mq.filter_match('sql92', 'a=3  and    b<>4 And c>5 AND d<=4', h)) AS same,
	   bool_and(mq.filter_match('sql92', 'a=3 and b<>4 And c>5 AND d<=4', h)
				IS NOT DISTINCT FROM
				mq.filter_match('sql92', 'a=3 or b<>4 Or c>5 OR d<=4', h)) AS same_as_or
  FROM (VALUES ('{"a":3,"b":5,"c":6,"d":1}'::jsonb), ('{"a":4}'), ('{"a":3,"b":4}'),
			   ('{}'), ('{"a":4,"b":5,"c":6,"d":1}')) v(h);

------------------------------------------------------------------------
-- Tag expressions (FilterAPI.buildSubscriptionData, FilterAPITest)
------------------------------------------------------------------------
-- testBuildSubscriptionData: "TAG1 || Tag2 || tag3" is {TAG1, Tag2, tag3},
-- trimmed, case-sensitive; testBuildTagSome: "A || B"
SELECT e, t, ft_try('tag', e, NULL, t) AS got
  FROM (VALUES ('TAG1 || Tag2 || tag3', 'TAG1'), ('TAG1 || Tag2 || tag3', 'Tag2'),
			   ('TAG1 || Tag2 || tag3', 'tag3'), ('TAG1 || Tag2 || tag3', 'tag2'),
			   ('TAG1 || Tag2 || tag3', ' Tag2'), ('TAG1 || Tag2 || tag3', 'TAG1 '),
			   ('A || B', 'A'), ('A || B', 'B'), ('A || B', 'C'), ('A || B', 'A || B'),
			   ('A', 'A'), ('A', NULL), ('A', ''),
			   -- "*" or empty: everything, also messages without a tag
			   ('*', 'A'), ('*', NULL), ('', 'A'), ('', NULL),
			   -- we trim before looking for "*" and "" (RocketMQ does not)
			   ('  ', 'A'), (' * ', NULL),
			   -- inside a list, "*" is just a tag; pieces are split on "||"
			   ('A || *', 'B'), ('A || *', '*'), ('A|||B', '|B'), ('A|||B', 'B'),
			   -- only separators: no tags, nothing matches (as RocketMQ)
			   ('||', 'A'), (' || || ', NULL),
			   -- "|" alone is part of a tag; tags may hold anything
			   ('A|B', 'A|B'), ('A|B', 'A'), ('ä || b c', 'b c'), ('ä || b c', 'ä')) v(e, t);
-- a NULL tag expression is no filter
SELECT ft_try('tag', NULL, NULL, NULL) AS null_expr, ft_try('tag', NULL, NULL, 'x') AS null_expr_tag;
-- many tags (the sorted hash table), with the first, middle and last
SELECT t, mq.filter_match('tag', (SELECT string_agg('t' || g, ' || ') FROM generate_series(1, 200) g), NULL, t)
  FROM (VALUES ('t1'), ('t100'), ('t200'), ('t201'), ('t0'), (NULL)) v(t);

------------------------------------------------------------------------
-- SQL92: three-valued logic (LogicExpression, UnaryExpression.createNOT)
------------------------------------------------------------------------
-- p is missing (NULL), t is true, f is false: AND/OR/NOT truth tables
SELECT e, ft_try('sql92', e, '{"t": true, "f": false}') AS got
  FROM (VALUES ('p AND t'), ('p AND f'), ('t AND p'), ('f AND p'), ('p AND p'),
			   ('p OR t'), ('p OR f'), ('t OR p'), ('f OR p'), ('p OR p'),
			   ('NOT p'), ('NOT t'), ('NOT f'), ('t AND t'), ('t AND f'),
			   ('f OR f'), ('t OR f'), ('NOT NOT t'),
			   ('TRUE'), ('FALSE'), ('NULL'), ('NOT NULL'), ('NULL OR TRUE')) v(e);
-- an evaluation error ends the evaluation (Java exception): not matched,
-- whatever else the expression says, unless evaluation never gets there
SELECT e, ft_try('sql92', e, '{"s": "abc"}') AS got
  FROM (VALUES ('s > 1'), ('s > 1 OR TRUE'), ('TRUE OR s > 1'), ('FALSE AND s > 1'),
			   ('s > 1 AND FALSE'), ('NOT (s > 1)'), ('s = 1 OR s = ''abc''')) v(e);
-- = and IS NULL (doCreateEqual): NULL = x is NULL but x = NULL is FALSE,
-- and two NULLs are equal
SELECT e, ft_try('sql92', e, '{"a": "x"}') AS got
  FROM (VALUES ('p = ''x'''), ('''x'' = p'), ('p <> ''x'''), ('''x'' <> p'),
			   ('p = q'), ('p <> q'), ('a = p'), ('p = a'),
			   ('p IS NULL'), ('a IS NULL'), ('p IS NOT NULL'), ('a IS NOT NULL'),
			   ('NULL IS NULL'), ('5 IS NULL'), ('(a = ''x'') IS NOT NULL')) v(e);
-- <, >, <=, >= are NULL when a side is NULL
SELECT e, ft_try('sql92', e, '{"a": 5}') AS got
  FROM (VALUES ('p > 1'), ('1 < p'), ('a > p'), ('p BETWEEN 1 AND 10'),
			   ('p NOT BETWEEN 1 AND 10'), ('p IN (''x'')'), ('p NOT IN (''x'')')) v(e);
-- a property used as a boolean: only a JSON true is TRUE (a string "true"
-- is not a Boolean), missing or null is NULL
SELECT h, ft_try('sql92', 'b', h) AS b, ft_try('sql92', 'NOT b', h) AS not_b
  FROM (VALUES ('{"b": true}'::jsonb), ('{"b": false}'), ('{"b": "true"}'),
			   ('{"b": 1}'), ('{"b": null}'), ('{}'), ('{"b": {}}')) v(h);

------------------------------------------------------------------------
-- SQL92: every comparison, with RocketMQ's conversions
------------------------------------------------------------------------
-- numbers: = <> > >= < <= between, Integer/Long/Double mixed
SELECT e, ft_try('sql92', e, '{"i": 5, "l": 3000000000, "d": 2.5, "z": 0, "neg": -7}') AS got
  FROM (VALUES ('i = 5'), ('i = 5.0'), ('i <> 5'), ('i > 4'), ('i >= 5'), ('i < 5'),
			   ('i <= 5'), ('l = 3000000000'), ('l > 2147483647'), ('l > i'),
			   ('d = 2.5'), ('d > 2'), ('d < 3'), ('d >= 2.50'), ('d <= 2.4999'),
			   ('i = 5L'), ('i BETWEEN 5 AND 5'), ('d BETWEEN 2 AND 3'),
			   ('d BETWEEN 2.6 AND 3'), ('d NOT BETWEEN 2.6 AND 3'),
			   ('z = 0'), ('z = 0.0'), ('neg = -7'), ('neg < -6.5'), ('-neg = 7'),
			   ('neg BETWEEN -10 AND -1'), ('i = +5'), ('i = - -5'),
			   ('i = .5E1'), ('i = 5.'), ('i = 50E-1'), ('d = 25e-1')) v(e);
-- a string property and a number: the string is read as the number's
-- class (Integer.valueOf, Long.valueOf, Double.valueOf); if it does not
-- read, the evaluation fails (NULL here, an exception in RocketMQ)
SELECT h, e, ft_try('sql92', e, h) AS got
  FROM (VALUES ('{"a": "3"}'::jsonb, 'a = 3'), ('{"a": "3"}', '3 = a'),
			   ('{"a": "3"}', 'a = 3.0'), ('{"a": "3.0"}', 'a = 3'),
			   ('{"a": "3.0"}', 'a = 3.0'), ('{"a": " 3"}', 'a = 3'),
			   ('{"a": " 3 "}', 'a = 3.0'), ('{"a": "+3"}', 'a = 3'),
			   ('{"a": "1.5d"}', 'a = 1.5'), ('{"a": "1e3"}', 'a > 999.5'),
			   ('{"a": "99999999999"}', 'a > 2'), ('{"a": "99999999999"}', 'a > 2147483648'),
			   ('{"a": "NaN"}', 'a > 1.0'), ('{"a": "NaN"}', 'a > 1'),
			   ('{"a": "-Infinity"}', 'a < -1.0'), ('{"a": "abc"}', 'a = 3'),
			   ('{"a": "abc"}', 'a <> 3'), ('{"a": ""}', 'a = 0')) v(h, e);
-- two string properties under <, >, <=, >=: compared as doubles, so "10"
-- is above "9"; under = as strings, so "10" is not "10.0"
SELECT h, e, ft_try('sql92', e, h) AS got
  FROM (VALUES ('{"a": "10", "b": "9"}'::jsonb, 'a > b'), ('{"a": "10", "b": "9"}', 'a = b'),
			   ('{"a": "10", "b": "10.0"}', 'a >= b'), ('{"a": "10", "b": "10.0"}', 'a = b'),
			   ('{"a": "x", "b": "1"}', 'a > b'), ('{"a": "x", "b": "x"}', 'a = b')) v(h, e);
-- a JSON number and a string literal or property: the string is read as
-- the number's class (a number without a fraction is an Integer or a Long)
SELECT h, e, ft_try('sql92', e, h) AS got
  FROM (VALUES ('{"a": 3}'::jsonb, 'a = ''3'''), ('{"a": 3.0}', 'a = ''3'''),
			   ('{"a": 3}', 'a = ''3.5'''), ('{"a": 3.5}', 'a = ''3.5'''),
			   ('{"a": 3000000000}', 'a = ''3000000000'''), ('{"a": 3}', 'a = ''x'''),
			   ('{"a": 3, "b": "3"}', 'a = b'), ('{"a": 3, "b": "3"}', 'b = a'),
			   ('{"a": 3.5, "b": "3"}', 'a > b'), ('{"a": 3, "b": "3.5"}', 'a < b'),
			   ('{"a": 1e2}', 'a = 100'), ('{"a": 0.1}', 'a = 0.1'),
			   ('{"a": 0.1}', 'a = ''0.1''')) v(h, e);
-- booleans: a string is read with Boolean.valueOf (any case of "true");
-- a Boolean on the left of a String fails (RocketMQ casts it to String);
-- against a number any comparison "answers -1" (so < is TRUE)
SELECT h, e, ft_try('sql92', e, h) AS got
  FROM (VALUES ('{"a": "TRUE"}'::jsonb, 'a = TRUE'), ('{"a": "yes"}', 'a = TRUE'),
			   ('{"a": "yes"}', 'a = FALSE'), ('{"a": "true"}', 'TRUE = a'),
			   ('{"a": true}', 'a = TRUE'), ('{"a": true}', 'TRUE = a'),
			   ('{"a": false}', 'a <> TRUE'), ('{"a": true}', 'a = 1'),
			   ('{"a": true}', 'a < 5'), ('{"a": true}', 'a > 5'),
			   ('{"a": 1}', 'a = TRUE'), ('{"a": 1, "b": true}', 'a < b'),
			   ('{"a": "x"}', '''x'' = TRUE'), ('{"a": 2}', '(a > 1) = TRUE'),
			   ('{"a": 2}', 'TRUE = a > 1'), ('{"a": 0}', '(a > 1) = FALSE')) v(h, e);
-- strings: = <> compare bytes exactly; IN needs a string value
SELECT h, e, ft_try('sql92', e, h) AS got
  FROM (VALUES ('{"s": "abc"}'::jsonb, 's = ''abc'''), ('{"s": "abc"}', 's = ''ABC'''),
			   ('{"s": "abc"}', 's <> ''abd'''), ('{"s": "it''s"}', 's = ''it''''s'''),
			   ('{"s": "ü"}', 's = ''ü'''), ('{"s": ""}', 's = '''''),
			   ('{"s": "b"}', 's IN (''a'', ''b'', ''c'', ''d'', ''e'', ''f'')'),
			   ('{"s": "g"}', 's NOT IN (''a'', ''b'', ''c'', ''d'', ''e'', ''f'')'),
			   ('{"s": 3}', 's IN (''3'')'), ('{"s": 3}', 's NOT IN (''3'')'),
			   ('{"s": true}', 's IN (''true'')'),
			   ('{"s": "aXb"}', 's contains ''x'''), ('{"s": "ab"}', 's contains ''abc'''),
			   ('{"s": "abc"}', 's startswith ''abc'''), ('{"s": "abc"}', 's endswith ''abc'''),
			   ('{"s": "grüße"}', 's contains ''üß'''), ('{"s": "grüße"}', 's endswith ''e''')) v(h, e);
-- objects and arrays: a value (IS NOT NULL) that equals nothing, fails
-- under <, >, and is no string for IN and CONTAINS
SELECT h, e, ft_try('sql92', e, h) AS got
  FROM (VALUES ('{"o": {}}'::jsonb, 'o IS NOT NULL'), ('{"o": {}}', 'o = 1'),
			   ('{"o": {}}', 'o <> 1'), ('{"o": [1]}', 'o > 1'), ('{"o": [1]}', '1 < o'),
			   ('{"o": []}', 'o IN (''x'')'), ('{"o": ["x"]}', 'o contains ''x'''),
			   ('{"o": {"a": 1}}', 'o = o'), ('{"o": {"a": 1}}', 'a = 1'),
			   ('{"o": [1]}', 'p > 1 OR o > 1')) v(h, e);
-- NOT BETWEEN bounds are not checked (as RocketMQ): never in range
SELECT ft_try('sql92', 'a NOT BETWEEN 10 AND 0', '{"a": 5}') AS not_between_reversed,
	   ft_try('sql92', 'a BETWEEN 5 AND -1', '{"a": 0}') AS between_negated_bound;

------------------------------------------------------------------------
-- SQL92: the message's tag is TAGS
------------------------------------------------------------------------
SELECT e, t, ft_try('sql92', e, '{"TAGS": "H"}', t) AS got
  FROM (VALUES ('TAGS = ''A''', 'A'), ('TAGS = ''A''', 'B'), ('TAGS = ''H''', NULL),
			   ('TAGS IS NULL', NULL), ('TAGS IN (''A'', ''B'')', 'B'),
			   ('TAGS startswith ''Ta''', 'TagA'), ('tags = ''A''', 'A'),
			   ('TAGS = ''''', '')) v(e, t);

------------------------------------------------------------------------
-- SQL92: precedence, keywords, names, literals, comments
------------------------------------------------------------------------
SELECT e, ft_try('sql92', e, h) AS got
  FROM (VALUES
		-- AND binds tighter than OR
		('a = 1 OR b = 2 AND c = 3', '{"a": 1, "b": 0, "c": 0}'::jsonb),
		('(a = 1 OR b = 2) AND c = 3', '{"a": 1, "b": 0, "c": 0}'),
		-- NOT binds tighter than =: NOT a = 1 is (NOT a) = 1, never TRUE
		('NOT a = 1', '{"a": 1}'), ('NOT a = 1', '{"a": 2}'), ('NOT (a = 1)', '{"a": 2}'),
		-- comparisons bind tighter than = and <>
		('a > 1 = b > 1', '{"a": 2, "b": 3}'), ('a > 1 <> b > 1', '{"a": 2, "b": 0}'),
		-- keywords in any case; names keep theirs
		('a Is NoT nUlL aNd b bEtWeEn 1 AnD 3 oR c iN (''x'')', '{"a": 1, "b": 2}'),
		('x CONTAINS ''y'' and x StartsWith ''y'' AND x endsWITH ''y''', '{"x": "y"}'),
		('True aNd NOT fAlSe', '{}'), ('A = 1', '{"a": 1}'), ('A = 1', '{"A": 1}'),
		-- names: letters, digits, _ and $, not first a digit
		('$a_1 = 1 AND _ = 2 AND a$ = 3', '{"$a_1": 1, "_": 2, "a$": 3}'),
		('notx = 1 AND isy = 2 AND in_ = 3', '{"notx": 1, "isy": 2, "in_": 3}'),
		-- literals
		('a = 10L AND b = 10l', '{"a": 10, "b": 10}'),
		('a = 2147483648', '{"a": 2147483648}'),
		('a = 9223372036854775807', '{"a": 9223372036854775807}'),
		('a = -9223372036854775807', '{"a": -9223372036854775807}'),
		('a = 1.7976931348623157E308', '{"a": 1.7976931348623157E308}'),
		('a = 4.9E-324', '{"a": 4.9E-324}'),
		-- comments and blanks
		(E'a = 1 -- the rest of the line\n AND b = 2', '{"a": 1, "b": 2}'),
		('a = 1 -- to the end', '{"a": 1}'), ('a /* x */=/**/1', '{"a": 1}'),
		(E'\ta\n=\r1\f', '{"a": 1}')) v(e, h);

------------------------------------------------------------------------
-- Parse errors: 42601 with the character position (in characters)
------------------------------------------------------------------------
SELECT left(e, 30) AS e, ft_try('sql92', e) AS got
  FROM (VALUES
		(''), ('   '), ('-- only a comment'), ('a ='), ('(a = 1'), ('a = 1)'),
		('a = 1 b = 2'), ('a = 1 AND'), ('a b'), ('a IS 1'), ('a IS NOT 1'),
		('a == 1'), ('a != 1'), ('a = "x"'), ('a.b = 1'), ('a-b = 1'), ('a = 007'),
		('a = 0L'), ('1a = 1'), ('a = 1e'), ('ä = 1'), ('''ü'' = a AND #'),
		('a = ''x'), ('a = 1 /* open'), ('in = 1'), ('a IN ()'), ('a IN (1)'),
		('a IN ''x'''), ('''x'' IN (''x'')'), ('NOT a IN (''x'')'), ('(a = 1) IN (''x'')'),
		('a NOT x'), ('a contains b'), ('a contains 1'), ('a BETWEEN 1'),
		('a BETWEEN 1 OR 2'),
		-- checks RocketMQ makes while building the tree
		('5'), ('''x'''), ('-a'), ('a + 1'), ('a = 1 AND 5'), ('NOT ''x'''),
		('a = NULL'), ('NULL = a'), ('a <> NULL'), ('TRUE = ''x'''), ('FALSE = 1'),
		('a > ''x'''), ('''x'' < a'), ('a > TRUE'), ('a > NULL'), ('a > (b = 1)'),
		('NOT a > 1'), ('a > 1 > 2'), ('a BETWEEN NULL AND 1'), ('a BETWEEN 1 AND NULL'),
		('a BETWEEN 2 AND 1'), ('a BETWEEN 1.5 AND 1'), ('a BETWEEN ''x'' AND 1'),
		('a BETWEEN ''a'' AND ''b'''), ('a BETWEEN TRUE AND TRUE'),
		('a NOT BETWEEN ''a'' AND 1'),
		('a = 9223372036854775808'), ('a > 1e400'), ('a > 1e-400'),
		('a < 1' || repeat('0', 400))) v(e);
-- and these parse: a literal on the left of = and of CONTAINS, NULL IS
-- NULL, 0.0 (which RocketMQ refuses: "less than Double.MIN_VALUE")
SELECT e, ft_try('sql92', e, '{"a": 0}') AS got
  FROM (VALUES ('''x'' = a'), ('''x'' = TRUE'), ('1 = a'), ('1 contains ''x'''),
			   ('NULL IS NULL'), ('a = 0.0'), ('a < -0.5'), ('a BETWEEN 0 AND 0.0')) v(e);

\set VERBOSITY sqlstate
-- the SQLSTATEs: 42601 bad expression, 22023 unknown type or headers that
-- are not an object, 22004 NULL filter_type, 54001 nesting too deep
SELECT mq.filter_match('sql92', 'a >', '{}');
SELECT mq.filter_match('sql92', 'a = ''', '{}');
SELECT mq.filter_match('sql92', '', NULL);
SELECT mq.filter_match('sql', 'a = 1', '{}');
SELECT mq.filter_match('', 'a = 1', '{}');
SELECT mq.filter_match(NULL, 'a = 1', '{}');
SELECT mq.filter_match('sql92', 'a = 1', '[1]');
SELECT mq.filter_match('sql92', 'a = 1', '3');
SELECT mq.filter_match('tag', 'A', 'null');
SELECT mq.filter_match('sql92', repeat('(', 100000) || 'a' || repeat(')', 100000), '{}');
SELECT mq.filter_match('sql92', repeat('NOT ', 100000) || 'a', '{}');
\set VERBOSITY default

------------------------------------------------------------------------
-- NULL and empty arguments
------------------------------------------------------------------------
SELECT ft_try('sql92', NULL, '{}') AS sql92_null_expr,
	   ft_try('sql92', 'a IS NULL', NULL) AS null_headers,
	   ft_try('sql92', 'TAGS IS NULL', NULL, NULL) AS null_tag,
	   ft_try('SQL92', 'a = 1', '{"a": 1}') AS type_case,
	   ft_try('TAG', 'A', NULL, 'A') AS tag_type_case,
	   ft_try('tag', 'A', '{"a": 1}', 'A') AS tag_ignores_headers,
	   mq.filter_match('sql92', 'a = 1', '{"a": 1}') AS tag_defaults_to_null;

------------------------------------------------------------------------
-- The compiled filter is cached per call site and recompiled when the
-- expression changes from row to row (ft_try above relies on it too, with
-- errors in between)
------------------------------------------------------------------------
CREATE TEMP TABLE ft_rows AS
  SELECT g, jsonb_build_object('n', g, 's', 'v' || (g % 3)) AS h,
		 CASE WHEN g % 2 = 0 THEN 'n > 5' ELSE 's = ''v1''' END AS e
	FROM generate_series(1, 10) g;
SELECT g, e, mq.filter_match('sql92', e, h) FROM ft_rows ORDER BY g;
SELECT count(*) FILTER (WHERE mq.filter_match('sql92', 'n BETWEEN 3 AND 7', h)) AS between_3_7,
	   count(*) FILTER (WHERE mq.filter_match('tag', 'v1 || v2', h, h->>'s')) AS tags_v1_v2
  FROM ft_rows;

DROP FUNCTION ft_try(text, text, jsonb, text);
