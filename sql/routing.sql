--
-- routing: topic and headers matchers (src/routing_topic.c,
-- src/routing_headers.c), checked against RabbitMQ's own test expectations.
--
-- Every "expected" list below is copied from rabbitmq-server:
--   deps/rabbit/test/routing_SUITE.erl                  (topic1/1)
--   deps/rabbit/test/rabbit_db_topic_exchange_SUITE.erl (topic_match_*)
--   deps/rabbit/test/exchanges_SUITE.erl                (headers_exchange*)
-- Each query prints what we compute and whether it equals RabbitMQ's answer.
--

------------------------------------------------------------------------
-- routing_SUITE:topic1 — the classic topic table
------------------------------------------------------------------------
CREATE TEMP TABLE rmq_bindings (n int, key text, q text);
INSERT INTO rmq_bindings VALUES
  (1, 'a.b.c', 't1'), (2, 'a.*.c', 't2'), (3, 'a.#.b', 't3'),
  (4, 'a.b.b.c', 't4'), (5, '#', 't5'), (6, '#.#', 't6'), (7, '#.b', 't7'),
  (8, '*.*', 't8'), (9, 'a.*', 't9'), (10, '*.b.c', 't10'), (11, 'a.#', 't11'),
  (12, 'a.#.#', 't12'), (13, 'b.b.c', 't13'), (14, 'a.b.b', 't14'),
  (15, 'a.b', 't15'), (16, 'b.c', 't16'), (17, '', 't17'), (18, '*.*.*', 't18'),
  (19, 'vodka.martini', 't19'), (20, 'a.b.c', 't20'), (21, '*.#', 't21'),
  (22, '#.*.#', 't22'), (23, '*.#.#', 't23'), (24, '*', 't25'),
  (25, '#.b.#', 't26'), (26, 'args-test', 't27'),
  (27, 'args-test', 't27');	-- RabbitMQ's "aliasing": same key, other args

CREATE TEMP TABLE rmq_expect (phase int, rk text, expected text[]);
INSERT INTO rmq_expect VALUES
  (1, 'a.b.c', '{t1,t2,t5,t6,t10,t11,t12,t18,t20,t21,t22,t23,t26}'),
  (1, 'a.b', '{t3,t5,t6,t7,t8,t9,t11,t12,t15,t21,t22,t23,t26}'),
  (1, 'a.b.b', '{t3,t5,t6,t7,t11,t12,t14,t18,t21,t22,t23,t26}'),
  (1, '', '{t5,t6,t17}'),
  (1, 'b.c.c', '{t5,t6,t18,t21,t22,t23,t26}'),
  (1, 'a.a.a.a.a', '{t5,t6,t11,t12,t21,t22,t23}'),
  (1, 'vodka.gin', '{t5,t6,t8,t21,t22,t23}'),
  (1, 'vodka.martini', '{t5,t6,t8,t19,t21,t22,t23}'),
  (1, 'b.b.c', '{t5,t6,t10,t13,t18,t21,t22,t23,t26}'),
  (1, 'nothing.here.at.all', '{t5,t6,t21,t22,t23}'),
  (1, 'oneword', '{t5,t6,t21,t22,t23,t25}'),
  (1, 'args-test', '{t5,t6,t21,t22,t23,t25,t27}'),
  -- after removing bindings 1, 5, 11, 19, 21 and 27 (one args-test alias)
  (2, 'a.b.c', '{t2,t6,t10,t12,t18,t20,t22,t23,t26}'),
  (2, 'a.b', '{t3,t6,t7,t8,t9,t12,t15,t22,t23,t26}'),
  (2, 'a.b.b', '{t3,t6,t7,t12,t14,t18,t22,t23,t26}'),
  (2, '', '{t6,t17}'),
  (2, 'b.c.c', '{t6,t18,t22,t23,t26}'),
  (2, 'a.a.a.a.a', '{t6,t12,t22,t23}'),
  (2, 'vodka.gin', '{t6,t8,t22,t23}'),
  (2, 'vodka.martini', '{t6,t8,t22,t23}'),
  (2, 'b.b.c', '{t6,t10,t13,t18,t22,t23,t26}'),
  (2, 'nothing.here.at.all', '{t6,t22,t23}'),
  (2, 'oneword', '{t6,t22,t23,t25}'),
  (2, 'args-test', '{t6,t22,t23,t25,t27}');

CREATE TEMP VIEW rmq_live AS
  SELECT p.phase, b.* FROM rmq_bindings b, (VALUES (1), (2)) p(phase)
  WHERE p.phase = 1 OR b.n NOT IN (1, 5, 11, 19, 21, 27);

-- through the single-pair matcher
SELECT e.phase, e.rk,
       array(SELECT DISTINCT q FROM rmq_live l
             WHERE l.phase = e.phase AND mq.topic_matches(l.key, e.rk)
             ORDER BY 1) AS matched,
       (SELECT array_agg(DISTINCT q ORDER BY q) FROM rmq_live l
        WHERE l.phase = e.phase AND mq.topic_matches(l.key, e.rk))
       = (SELECT array_agg(x ORDER BY x) FROM unnest(e.expected) x) AS as_rabbitmq
FROM rmq_expect e ORDER BY e.phase, e.rk;

-- through the trie
SELECT e.phase, e.rk,
       (SELECT array_agg(DISTINCT l.q ORDER BY l.q)
        FROM unnest(mq.topic_route(
                (SELECT array_agg(key ORDER BY n) FROM rmq_live l2
                 WHERE l2.phase = e.phase), e.rk)) AS m(pos),
             (SELECT row_number() OVER (ORDER BY n) AS pos, q FROM rmq_live l3
              WHERE l3.phase = e.phase) l
        WHERE l.pos = m.pos)
       = (SELECT array_agg(x ORDER BY x) FROM unnest(e.expected) x) AS as_rabbitmq
FROM rmq_expect e ORDER BY e.phase, e.rk;

------------------------------------------------------------------------
-- rabbit_db_topic_exchange_SUITE
-- topic_route() returns 1-based positions of the matching binding keys.
------------------------------------------------------------------------
-- topic_match_basic: foo.bar -> q-foo, foo.baz -> q-bar, other.key -> q-baz
SELECT rk, mq.topic_route('{foo.bar,foo.baz,other.key}', rk)
FROM unnest('{foo.bar,foo.baz,other.key,no.match}'::text[]) rk;
-- expected: {1} {2} {3} {}

-- topic_match_wildcards: 1 foo.*  2 foo.#  3 foo.bar  4 foo.*.baz  5 #
SELECT rk, mq.topic_route('{foo.*,foo.#,foo.bar,foo.*.baz,#}', rk)
FROM unnest('{foo.bar,foo.bar.baz,foo.bar.baz.qux,foo.qux,bar.foo}'::text[]) rk;
-- expected: {1,2,3,5} {2,4,5} {2,5} {1,2,5} {5}

-- topic_match_hash_middle: 1 #.c  2 #.b.c  3 a.#.d  4 #.*.#
SELECT rk, mq.topic_route('{#.c,#.b.c,a.#.d,#.*.#}', rk)
FROM unnest('{a.b.c,c,x.y.b.c,a.d,a.b.c.d,x,x.c}'::text[]) rk;
-- expected: {1,2,4} {1,4} {1,2,4} {3,4} {3,4} {4} {1,4}

-- topic_match_empty_routing_key: 1 #  2 foo.bar
SELECT rk, mq.topic_route('{#,foo.bar}', rk)
FROM unnest('{"",foo.bar}'::text[]) rk;
-- expected: {1} {1,2}

-- topic_match_deep_hierarchy: 1 #  2 T.#  3 T.*
SELECT mq.topic_route(ARRAY['#', t || '.#', t || '.*'], t) AS t,
       mq.topic_route(ARRAY['#', t || '.#', t || '.*'], t || '.1') AS t_1
FROM (SELECT 'a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z'::text) s(t);
-- expected: {1,2} {1,2,3}

-- topic_match_all_wildcards, topic_match_alternating_wildcards
SELECT mq.topic_route(ARRAY[repeat('*.', 26) || '#',
                            'a.*.c.*.e.*.g.*.i.*.k.*.m.*.o.*.q.*.s.*.u.*.w.*.y.*.#'],
                      'a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z');
-- expected: {1,2}

-- topic_match_many_hashes: 15 '#' against 31 words (needs memoization)
SELECT mq.topic_route(ARRAY[array_to_string(array_fill('#'::text, '{15}'), '.')],
                      array_to_string(array_fill('a'::text, '{31}'), '.')) AS trie,
       mq.topic_matches(array_to_string(array_fill('#'::text, '{15}'), '.'),
                        array_to_string(array_fill('a'::text, '{31}'), '.')) AS pair;
-- expected: {1} t

-- topic_match_overlapping_filters:
-- 1 a.b  2 a.b.#  3 a.b.c  4 a.b.*  5 a.b.d  6 a.*.*  7 a.*.#  8 *.b.c
SELECT rk, mq.topic_route('{a.b,a.b.#,a.b.c,a.b.*,a.b.d,a.*.*,a.*.#,*.b.c}', rk)
FROM unnest('{a.b.c,a.b}'::text[]) rk;
-- expected: {2,3,4,6,7,8} {1,2,7}

-- topic_match_empty_segments: 1 .#  2 .*  3 .*.a.b.c
SELECT mq.topic_route('{.#,.*,.*.a.b.c}', '.0.a.b.c');
-- expected: {1,3}

-- topic_match_large_fanout: 500 bindings with the same key
SELECT mq.topic_route(array_fill('events.user.login'::text, '{500}'),
                      'events.user.login') = array(SELECT generate_series(1, 500));
-- expected: t

-- topic_match_unicode:
-- 1 传感器.温度.摄氏  2 🏠.🌡️.📊  3 датчик.температура.цельсий
-- 4 sensor.données.état  5 传感器.*.摄氏  6 датчик.#  7 #
SELECT rk, mq.topic_route('{传感器.温度.摄氏,🏠.🌡️.📊,датчик.температура.цельсий,sensor.données.état,传感器.*.摄氏,датчик.#,#}', rk)
FROM unnest('{传感器.温度.摄氏,🏠.🌡️.📊,датчик.температура.цельсий,sensor.données.état,传感器.压力.摄氏,датчик.давление}'::text[]) rk;
-- expected: {1,5,7} {2,7} {3,6,7} {4,7} {5,7} {6,7}

------------------------------------------------------------------------
-- Corner cases (RabbitMQ: "" has no words, "a." is {a,""}, "." is {"",""})
------------------------------------------------------------------------
SELECT b AS binding_key, r AS routing_key, mq.topic_matches(b, r),
       mq.topic_route(ARRAY[b], r) = '{1}' AS trie
FROM (VALUES
  ('#', ''),			-- t: # matches zero words
  ('#', 'a.b.c'),		-- t
  ('#', '.'),			-- t
  ('*', ''),			-- f: "" has no word for * to take
  ('*', 'a'),			-- t
  ('*', 'a.b'),			-- f
  ('*', '.'),			-- f: two empty words
  ('', ''),				-- t
  ('', 'a'),			-- f
  ('', '.'),			-- f
  ('.', '.'),			-- t
  ('.', ''),			-- f
  ('*.*', '.'),			-- t: "." is two empty words
  ('*.*', 'a.'),		-- t
  ('*.*', 'a'),			-- f
  ('*.*', 'a.b.c'),		-- f
  ('#.#', ''),			-- t
  ('#.#', 'a.b.c'),		-- t
  ('a.#.b', 'a.b'),		-- t: # takes zero words
  ('a.#.b', 'a.x.y.b'),	-- t
  ('a.#.b', 'a.b.c'),	-- f
  ('#.a.#', 'a'),		-- t
  ('#.a.#', 'x.a.y'),	-- t
  ('#.a.#', 'x.y'),		-- f
  ('#.a.#', ''),		-- f
  ('a.', 'a.'),			-- t: trailing empty word
  ('a.', 'a'),			-- f
  ('a.*', 'a.'),		-- t: * takes the empty word
  ('a.#', 'a'),			-- t
  ('a.#', 'a.'),		-- t
  ('.a', 'a'),			-- f: leading empty word
  ('.a', '.a'),			-- t
  ('*.a', '.a'),		-- t
  ('a..b', 'a..b'),		-- t
  ('a.*.b', 'a..b'),	-- t: the empty middle word is a word
  ('a.#.b', 'a..b'),	-- t
  ('a..b', 'a.b'),		-- f
  ('a#b', 'a#b'),		-- t: # inside a word is literal
  ('a#b', 'axb'),		-- f
  ('a*', 'ab'),			-- f: * inside a word is literal
  ('#a', 'xa'),			-- f
  ('a.b', 'a.*'),		-- f: wildcards in routing keys are literal
  ('a.*', 'a.*'),		-- t
  ('a.#', 'a.#'),		-- t
  ('A.b', 'a.b')		-- f: case-sensitive
) v(b, r);

------------------------------------------------------------------------
-- The trie against the single-pair matcher, exhaustively over small keys
------------------------------------------------------------------------
-- all keys of 1..n words over an alphabet (plus "" = no words)
CREATE FUNCTION pg_temp.keys(alphabet text[], maxlen int) RETURNS SETOF text
LANGUAGE sql AS $$
  WITH RECURSIVE k(key, len) AS (
    SELECT w, 1 FROM unnest(alphabet) w
    UNION ALL
    SELECT k.key || '.' || w, len + 1 FROM k, unnest(alphabet) w WHERE len < maxlen)
  SELECT '' UNION ALL SELECT key FROM k
$$;

CREATE TEMP TABLE rt_bkeys AS
  SELECT row_number() OVER (ORDER BY k COLLATE "C") AS n, k AS key
  FROM (SELECT DISTINCT k FROM pg_temp.keys('{a,b,"",*,#}', 3) k) s;
CREATE TEMP TABLE rt_rkeys AS
  SELECT DISTINCT k AS key FROM pg_temp.keys('{a,b,"",*,#}', 3) k;

SELECT count(*) AS binding_keys FROM rt_bkeys;
SELECT count(*) AS routing_keys FROM rt_rkeys;
-- pairs that match (a sanity check that the comparison is not vacuous)
SELECT count(*) AS matching_pairs
FROM rt_bkeys b, rt_rkeys r WHERE mq.topic_matches(b.key, r.key);
-- routing keys where the trie and the pair matcher disagree: none
WITH bk AS (SELECT array_agg(key ORDER BY n) AS keys FROM rt_bkeys)
SELECT r.key, mq.topic_route(bk.keys, r.key) AS trie,
       array(SELECT b.n FROM rt_bkeys b WHERE mq.topic_matches(b.key, r.key)
             ORDER BY b.n) AS pair
FROM rt_rkeys r, bk
WHERE mq.topic_route(bk.keys, r.key) <>
      array(SELECT b.n::int FROM rt_bkeys b WHERE mq.topic_matches(b.key, r.key)
            ORDER BY b.n);

-- longer keys, many '#': 4-word binding keys over {a,b,*,#}, routing keys
-- of up to 6 words over {a,b}
TRUNCATE rt_bkeys;
INSERT INTO rt_bkeys
  SELECT row_number() OVER (ORDER BY k COLLATE "C"), k
  FROM pg_temp.keys('{a,b,*,#}', 4) k WHERE k = '' OR array_length(string_to_array(k, '.'), 1) = 4;
TRUNCATE rt_rkeys;
INSERT INTO rt_rkeys SELECT DISTINCT k FROM pg_temp.keys('{a,b}', 6) k;
SELECT count(*) AS binding_keys FROM rt_bkeys;
SELECT count(*) AS routing_keys FROM rt_rkeys;
SELECT count(*) AS matching_pairs
FROM rt_bkeys b, rt_rkeys r WHERE mq.topic_matches(b.key, r.key);
WITH bk AS (SELECT array_agg(key ORDER BY n) AS keys FROM rt_bkeys)
SELECT r.key
FROM rt_rkeys r, bk
WHERE mq.topic_route(bk.keys, r.key) <>
      array(SELECT b.n::int FROM rt_bkeys b WHERE mq.topic_matches(b.key, r.key)
            ORDER BY b.n);

-- NULL is an error (22004), for an argument and for an element of binding_keys
SELECT mq.topic_route('{a,NULL,#}', 'a');
SELECT mq.topic_route(NULL, 'a');
SELECT mq.topic_matches(NULL, 'a');

------------------------------------------------------------------------
-- Headers: exchanges_SUITE:headers_exchange
------------------------------------------------------------------------
SELECT m.msg,
       mq.headers_match('{"x-match": "all", "foo": "bar", "fuu": "ber"}', m.h) AS q_all,
       mq.headers_match('{"x-match": "any", "foo": "bar", "fuu": "ber"}', m.h) AS q_any
FROM (VALUES ('msg1', '{"foo": "bar", "fuu": "ber"}'::jsonb),
             ('msg2', '{"foo": "bar"}'),
             ('msg3', NULL)) m(msg, h);
-- expected: q_all gets msg1; q_any gets msg1 and msg2

------------------------------------------------------------------------
-- Headers: exchanges_SUITE:headers_exchange_key_presence_only
-- (an AMQP void argument is a JSON null here)
------------------------------------------------------------------------
SELECT m.msg,
       mq.headers_match('{"x-match": "all-with-x", "foo": null, "x-foo": null}', m.h) AS q_all,
       mq.headers_match('{"x-match": "any-with-x", "foo": null, "x-foo": null}', m.h) AS q_any
FROM (VALUES ('msg1', '{"foo": "anything", "x-foo": 42}'::jsonb),
             ('msg2', '{"foo": "whatever"}'),
             ('msg3', '{"x-foo": "something"}'),
             ('msg4', '{"other": "value"}'),
             ('msg5', NULL)) m(msg, h);
-- expected: q_all gets msg1; q_any gets msg1, msg2, msg3

------------------------------------------------------------------------
-- Headers: more of rabbit_exchange_type_headers' rules
------------------------------------------------------------------------
SELECT b AS binding, h AS headers, mq.headers_match(b::jsonb, h::jsonb)
FROM (VALUES
  -- no x-match means all
  ('{"a": 1, "b": 2}', '{"a": 1, "b": 2, "c": 3}'),		-- t
  ('{"a": 1, "b": 2}', '{"a": 1}'),						-- f
  -- no (non-x) entries: all matches everything, any nothing
  ('{}', NULL),											-- t
  ('{}', '{"a": 1}'),									-- t
  ('{"x-match": "all"}', '{}'),							-- t
  ('{"x-match": "any"}', '{"a": 1}'),					-- f
  ('{"x-match": "all-with-x"}', NULL),					-- t
  ('{"x-match": "any-with-x"}', '{"x-match": "any-with-x"}'),	-- f: x-match never takes part
  -- plain all/any ignore x- entries of the binding
  ('{"x-match": "all", "x-foo": "1"}', '{}'),			-- t
  ('{"x-match": "any", "x-foo": "1"}', '{"x-foo": "1"}'),	-- f
  ('{"x-match": "any", "x-foo": "1", "a": 1}', '{"a": 1}'),	-- t
  -- ... the -with-x modes do not
  ('{"x-match": "all-with-x", "x-foo": "1"}', '{"x-foo": "1"}'),	-- t
  ('{"x-match": "all-with-x", "x-foo": "1"}', '{}'),		-- f
  ('{"x-match": "any-with-x", "x-foo": "1", "a": 1}', '{"x-foo": "1"}'),	-- t
  -- message x- headers do not matter to plain modes
  ('{"x-match": "all", "a": 1}', '{"a": 1, "x-b": 2}'),	-- t
  -- null (void): presence only, whatever the value, null included
  ('{"a": null}', '{"a": null}'),						-- t
  ('{"a": null}', '{"a": [1, 2]}'),						-- t
  ('{"a": null}', '{"b": null}'),						-- f
  ('{"a": 1}', '{"a": null}'),							-- f
  -- values compare with their JSON type
  ('{"a": 1}', '{"a": "1"}'),							-- f
  ('{"a": "1"}', '{"a": 1}'),							-- f
  ('{"a": true}', '{"a": "true"}'),						-- f
  ('{"a": false}', '{"a": false}'),						-- t
  ('{"a": ""}', '{"a": ""}'),							-- t
  ('{"a": "x"}', '{"a": "X"}'),							-- f
  -- numbers by value: 1 = 1.0 (JSON has one number type; see routing_headers.c)
  ('{"a": 1}', '{"a": 1.0}'),							-- t
  ('{"a": 1.50}', '{"a": 1.5}'),						-- t
  ('{"a": 1}', '{"a": 2}'),								-- f
  -- containers compare structurally: key order no, array order yes
  ('{"a": {"x": 1, "y": [1, 2]}}', '{"a": {"y": [1, 2], "x": 1}}'),	-- t
  ('{"a": [1, 2]}', '{"a": [2, 1]}'),					-- f
  ('{"a": [1]}', '{"a": {"1": 1}}'),					-- f
  ('{"a": [1]}', '{"a": 1}'),							-- f
  ('{"a": {}}', '{"a": []}'),							-- f
  -- header names are case-sensitive
  ('{"A": 1}', '{"a": 1}'),								-- f
  -- any: one match is enough, all: one miss is enough
  ('{"x-match": "any", "a": 1, "b": 2}', '{"b": 2}'),		-- t
  ('{"x-match": "any", "a": 1, "b": 2}', '{"a": 2, "b": 1}'),	-- f
  ('{"x-match": "all", "a": 1, "b": null}', '{"a": 1, "b": 0}'),	-- t
  ('{"x-match": "all", "a": 1, "b": null}', '{"a": 1}')		-- f
) v(b, h);

-- NULL binding arguments are an error (NULL headers are a message without any)
SELECT mq.headers_match(NULL, '{"a": 1}');

-- errors: bad x-match values, non-object arguments or headers
SELECT mq.headers_match('{"x-match": "ALL"}', '{}');
SELECT mq.headers_match('{"x-match": "some"}', NULL);
SELECT mq.headers_match('{"x-match": 1}', '{}');
SELECT mq.headers_match('{"x-match": null}', '{}');
SELECT mq.headers_match('[1, 2]', '{}');
SELECT mq.headers_match('{"a": 1}', '"a"');
