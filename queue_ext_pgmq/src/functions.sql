------------------------------------------------------------
-- Names, checks, helpers
------------------------------------------------------------
CREATE OR REPLACE FUNCTION pgmq.acquire_queue_lock(queue_name TEXT)
RETURNS void AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('pgmq.queue_' || queue_name));
END;
$$ LANGUAGE plpgsql;

-- pgmq's check of a queue name, and its table name (lower-cased)
CREATE OR REPLACE FUNCTION pgmq.format_table_name(queue_name text, prefix text)
RETURNS TEXT AS $$
BEGIN
    IF queue_name ~ '\$|;|--|'''
    THEN
        RAISE EXCEPTION 'queue name contains invalid characters: $, ;, --, or \''';
    END IF;
    RETURN lower(prefix || '_' || queue_name);
END;
$$ LANGUAGE plpgsql IMMUTABLE;

-- (The PL/pgSQL functions that raise pgmq's errors keep the statements
-- that raise them on pgmq's line numbers, so that an error's CONTEXT reads
-- as pgmq's.)
CREATE OR REPLACE FUNCTION pgmq.validate_queue_name(queue_name TEXT)
RETURNS void AS $$
BEGIN
  IF length(queue_name) > 47 THEN
    -- a queue's longest table name must fit PostgreSQL's 63 characters:
    -- pg_partman's template_pgmq_a_<name> is 16 + 47 (pgmq's limit, kept
    -- here for every kind of queue, as pgmq keeps it)
    --
    RAISE EXCEPTION 'queue name is too long, maximum length is 47 characters';
  END IF;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq._extension_exists(extension_name TEXT)
RETURNS BOOLEAN LANGUAGE SQL AS $$
  SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = extension_name)
$$;

-- Is the relation pgmq.<table_name> a member of this extension?
CREATE OR REPLACE FUNCTION pgmq._belongs_to_pgmq(table_name TEXT)
RETURNS BOOLEAN LANGUAGE SQL AS $$
  SELECT EXISTS (
    SELECT 1 FROM pg_depend d
     WHERE d.refclassid = 'pg_extension'::regclass
       AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'queue_ext_pgmq')
       AND d.classid = 'pg_class'::regclass
       AND d.objid = (SELECT c.oid FROM pg_class c
                       WHERE c.relname = table_name
                         AND c.relnamespace = 'pgmq'::regnamespace)
       AND d.deptype = 'e')
$$;

-- Is pgmq.<qtable> a table left by DROP EXTENSION (its comment says so:
-- pgmq._drop_leave in drop_extension.sql)?
CREATE OR REPLACE FUNCTION pgmq._left_table(qtable TEXT)
RETURNS BOOLEAN LANGUAGE SQL STABLE AS $$
  SELECT EXISTS (
    SELECT 1 FROM pg_class c
     WHERE c.relnamespace = 'pgmq'::regnamespace AND c.relname = qtable
       AND c.relkind = 'r'
       AND obj_description(c.oid, 'pg_class') LIKE 'queue_ext_pgmq: left by DROP EXTENSION%')
$$;

-- The queue_ext queue of a pgmq queue
CREATE OR REPLACE FUNCTION pgmq._queue(queue_name TEXT)
RETURNS TEXT LANGUAGE SQL IMMUTABLE AS $$
  SELECT 'pgmq.' || pgmq.format_table_name(queue_name, 'q')
$$;

-- The msg_id sequence of queue_ext queue qe (NULL: none)
CREATE OR REPLACE FUNCTION pgmq._seq(qe TEXT)
RETURNS REGCLASS LANGUAGE SQL STABLE AS $$
  SELECT to_regclass(format('pgmq.%I', substr(qe, 6) || '_msg_id_seq'))
$$;

-- The business key of pgmq message id of queue_ext queue qe, whose msg_id
-- sequence is seq: what send stores and delete, archive and set_vt look for
-- (text || text only, each part cast to text: textcat is immutable, so the
-- planner inlines this; text || oid is textanycat, stable, which kept it a
-- function call of its own, a third of a send's time).
--
-- '<oid>:<n><id>', n the id's number of digits as a letter ('A' one, 'B'
-- two, ...): the sequence's oid tells the queue (and a queue from an
-- earlier one of the same name), and the id, led by its length, sorts as a
-- number.  A queue's keys are then a range of their own in the log's key
-- index, in the order of their ids, and its sends go one after the other
-- to the end of that range.  With 0.1's '<id>:<qe>:<oid>' (pgmq._key_legacy,
-- still the key of a message sent before the update from 0.1) a queue's
-- consecutive sends went to pages all over the index, between the same ids
-- of every other queue and of earlier queues of the same name ('1:',
-- '10:', '100:' apart): a quarter of a send_batch's time was that index's
-- insert.  Short, and different from the next key early: each of an index
-- descent's comparisons (strcoll, unless the collation is C) reads few
-- bytes.  A negative id (a sequence set so) keeps 0.1's form.
-- pgmq._msg_id reads the id from either.
CREATE OR REPLACE FUNCTION pgmq._key(qe TEXT, seq OID, id BIGINT)
RETURNS TEXT LANGUAGE SQL IMMUTABLE AS $$
  SELECT CASE WHEN id >= 0 THEN seq::text || ':' || chr(64 + length(id::text)) || id::text
              ELSE id::text || ':' || qe || ':' || seq::text END
$$;

-- The last msg_id of the queue of msg_id sequence seq sent before the
-- update from 0.1 (NULL: none, or no such update)
CREATE OR REPLACE FUNCTION pgmq._legacy_upto(seq OID)
RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT l.last_msg_id FROM pgmq._legacy_keys l WHERE l.seq_oid = seq);
END
$$;

-- The key of message id as 0.1 stored it: messages of a queue that existed
-- before the update from 0.1, up to the msg_id pgmq._legacy_keys has for
-- its sequence, are found by it
CREATE OR REPLACE FUNCTION pgmq._key_legacy(qe TEXT, seq OID, id BIGINT)
RETURNS TEXT LANGUAGE SQL IMMUTABLE AS $$
  SELECT id::text || ':' || qe || ':' || seq::text
$$;

-- pgmq's error for a queue that does not exist (as its missing table gives)
CREATE OR REPLACE FUNCTION pgmq._check_queue(queue_name TEXT)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM mq._queue_stats(pgmq._queue(queue_name)) q
                   WHERE q.queue = pgmq._queue(queue_name)) THEN
        RAISE EXCEPTION 'relation "pgmq.%" does not exist', pgmq.format_table_name(queue_name, 'q')
            USING ERRCODE = 'undefined_table';
    END IF;
END
$$;

-- A message's body as pgmq returns it (a NULL message is stored empty,
-- with its own content type; the length is looked at first, it is cheaper)
CREATE OR REPLACE FUNCTION pgmq._message(body bytea, properties jsonb)
RETURNS jsonb LANGUAGE SQL STABLE AS $$
  SELECT CASE WHEN octet_length(body) = 0
                   AND properties->>'content_type' = 'application/x-pgmq-null' THEN NULL
              ELSE convert_from(body, pg_catalog.getdatabaseencoding())::jsonb END
$$;

-- pgmq's msg_id of a queue_ext message of queue qe, from its key (pgmq._key:
-- '<oid>:<n><id>'; 0.1's, and a negative id's: '<id>:pgmq.q_<name>:<oid>')
CREATE OR REPLACE FUNCTION pgmq._msg_id(key text)
RETURNS bigint LANGUAGE SQL IMMUTABLE AS $$
  SELECT CASE WHEN strpos(key, ':pgmq.') > 0 THEN split_part(key, ':', 1)::bigint
              ELSE substr(key, strpos(key, ':') + 2)::bigint END
$$;

-- The queue_ext message ids of pgmq messages msg_ids of queue qe (their
-- keys pgmq._key, or pgmq._key_legacy for those 0.1 sent), by one index scan per
-- key and log segment in C (mq._log_find_keys).  Only ids of messages sent
-- to qe come back, nothing of their contents: what may be done with them
-- is checked as the caller by mq.lease_ids and mq.message.
CREATE OR REPLACE FUNCTION pgmq._qe_ids(qe text, msg_ids bigint[])
RETURNS TABLE (msg_id bigint, qe_id bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    seq oid := pgmq._seq(qe);
BEGIN
    IF seq IS NULL THEN
        RETURN;
    END IF;
    -- plpgsql, not SQL: its plan is kept for the session
    -- (and the keys of 0.1 of the ids sent before the update from 0.1)
    RETURN QUERY
        SELECT pgmq._msg_id(k.key), k.msg_id
          FROM mq._log_find_keys(qe, ARRAY(SELECT pgmq._key(qe, seq, u)
                                             FROM unnest(msg_ids) AS u WHERE u IS NOT NULL
                                           UNION
                                           SELECT pgmq._key_legacy(qe, seq, u)
                                             FROM unnest(msg_ids) AS u
                                             JOIN pgmq._legacy_keys l
                                               ON l.seq_oid = seq AND u <= l.last_msg_id)) k;
END
$$;

-- The queue_ext message id of pgmq message msg_id of queue qe (NULL: none)
CREATE OR REPLACE FUNCTION pgmq._qe_id(qe text, msg_id bigint)
RETURNS bigint LANGUAGE SQL STABLE AS $$
  SELECT k.qe_id FROM pgmq._qe_ids(qe, ARRAY[msg_id]) k
$$;

-- A pgmq vt (seconds) as a queue_ext lease: leases are positive, and a
-- vt of 0 or less makes the message visible again at once (NULL stays
-- NULL: queue_ext refuses it, 22004, where pgmq's vt column would, 23502)
CREATE OR REPLACE FUNCTION pgmq._lease(vt integer)
RETURNS interval LANGUAGE SQL IMMUTABLE AS $$
  SELECT CASE WHEN vt IS NULL THEN NULL
              WHEN vt > 0 THEN make_interval(secs => vt)
              ELSE interval '1 microsecond' END
$$;

-- Delayed messages of queue qe (queue_ext's timers, readable by their
-- owner only): id and due time.  (PL/pgSQL, as the other SECURITY DEFINER
-- helpers that are called often: such an SQL function is never inlined,
-- and was parsed and planned again at every call.)
CREATE OR REPLACE FUNCTION pgmq._delayed(qe text)
RETURNS TABLE (msg_id bigint, due timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
        SELECT t.msg_id, t.due FROM mq.timer t JOIN mq.cat_queue c ON c.id = t.queue_id
         WHERE c.name = qe;
END
$$;
REVOKE ALL ON FUNCTION pgmq._delayed(text) FROM PUBLIC;

-- Disarm the timer of delayed message qe_id of queue qe: false if it has
-- none (mq.cancel refuses a message that is not delayed)
CREATE OR REPLACE FUNCTION pgmq._cancel(qe text, qe_id bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM pgmq._delayed(qe) d WHERE d.msg_id = qe_id) THEN
        RETURN mq.cancel(qe_id) > 0;
    END IF;
    RETURN false;
END
$$;

-- pgmq's last_read_at of a message that is not being read now: queue_ext
-- keeps how often a message was delivered, not when, so a message read
-- before gets its enqueued_at (NULL: never read).  The rows a read returns
-- have the read's time.
CREATE OR REPLACE FUNCTION pgmq._last_read(read_ct integer, enqueued_at timestamptz)
RETURNS timestamptz LANGUAGE SQL IMMUTABLE AS $$
  SELECT CASE WHEN read_ct > 0 THEN enqueued_at END
$$;

-- The rows pgmq keeps in pgmq.q_<name>: ready messages (what a read would
-- take, in its order, all of them), leased ones (up to 10000), delayed ones
CREATE OR REPLACE FUNCTION pgmq._queue_rows(qe text)
RETURNS SETOF pgmq.message_record LANGUAGE SQL STABLE AS $$
  SELECT pgmq._msg_id(b.key), b.delivery_count, b.published_at,
         pgmq._last_read(b.delivery_count, b.published_at), b.published_at,
         pgmq._message(b.body, b.properties), b.headers
    FROM mq._browse_all(qe) b
  UNION ALL
  SELECT pgmq._msg_id(m.key), f.delivery_count, m.published_at,
         pgmq._last_read(f.delivery_count, m.published_at), f.lease_until,
         pgmq._message(m.body, m.properties), m.headers
    FROM mq.in_flight(qe, 10000) f, LATERAL mq.message(f.msg_id) m
  UNION ALL
  SELECT pgmq._msg_id(m.key), 0, m.published_at, NULL, d.due,
         pgmq._message(m.body, m.properties), m.headers
    FROM pgmq._delayed(qe) d, LATERAL mq.message(d.msg_id) m
$$;

-- The newest and oldest enqueued_at of queue qe's messages, for
-- pgmq.metrics.  The ready messages looked at are the first 10000 (so that
-- metrics stays cheap); those being read and the delayed ones all.
CREATE OR REPLACE FUNCTION pgmq._queue_ages(qe TEXT, OUT newest timestamptz, OUT oldest timestamptz)
LANGUAGE SQL STABLE AS $$
  SELECT max(t), min(t) FROM (
    SELECT b.published_at FROM mq.browse(qe, 10000) b
    UNION ALL
    SELECT m.published_at FROM mq.in_flight(qe, 10000) f, LATERAL mq.message(f.msg_id) m
    UNION ALL
    SELECT m.published_at FROM pgmq._delayed(qe) d, LATERAL mq.message(d.msg_id) m
  ) AS x(t)
$$;

-- The same as the extension's owner, for pg_monitor (pgmq 1.13: metrics
-- without the right to read a message)
CREATE OR REPLACE FUNCTION pgmq._monitor_ages(qe TEXT, OUT newest timestamptz, OUT oldest timestamptz)
LANGUAGE SQL STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT a.newest, a.oldest FROM pgmq._queue_ages(qe) a
$$;
REVOKE ALL ON FUNCTION pgmq._monitor_ages(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgmq._monitor_ages(text) TO pg_monitor;

------------------------------------------------------------
-- Sending
------------------------------------------------------------

-- Whether a send to the queue table qtable ('q_<name>', lower case) may
-- have to notify: an IMMUTABLE SQL function whose body names the queues of
-- pgmq.notify_insert_throttle as constants, so that the planner inlines it
-- into the sends' plans as "qtable = ANY('{q_a,q_b}')" (or folds it to
-- false while no queue has enable_notify_insert).  A send to a queue
-- without it compares a name with a short array and pays nothing else, in
-- any database (issue 40: the look at pgmq.notify_insert_throttle through
-- a SECURITY DEFINER function, in every send once any queue had it, cost
-- up to two thirds of a send).  pgmq._notify_wanted_set() writes the
-- function again whenever the set of queues changes (the trigger below;
-- not on the UPDATE of last_notified_at that every notification makes); a
-- change of the function invalidates the plans that inlined it, in every
-- session, when its transaction commits, as the table's rows become
-- visible.  true only says "look": pgmq._notify_insert looks at the table.
-- (0.2 before issue 40 had a form without arguments, true for all queues.)
DROP FUNCTION IF EXISTS pgmq._notify_wanted();
CREATE OR REPLACE FUNCTION pgmq._notify_wanted(qtable TEXT)
RETURNS boolean LANGUAGE SQL IMMUTABLE AS $$
  SELECT false
$$;

-- pgmq._notify_wanted(text) made to name the queues of
-- pgmq.notify_insert_throttle.  Under an advisory lock, so that two
-- transactions never write the function at once, and the look at the
-- table is after the lock: in READ COMMITTED it sees what the transaction
-- that held the lock committed.  A snapshot taken earlier (REPEATABLE
-- READ, SERIALIZABLE) may miss such rows: there it only ever adds queues
-- to those the function names, which is always safe (a queue named
-- without notifications costs its sends a look at the table, until the
-- next change in READ COMMITTED).  As the extension's owner (who owns
-- the function).
CREATE OR REPLACE FUNCTION pgmq._notify_wanted_set()
RETURNS void SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    wanted text[];
    current_body text;
    current_queues text[];
    body text;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('pgmq._notify_wanted'));
    SELECT array_agg(DISTINCT lower('q_' || t.queue_name))
      INTO wanted
      FROM pgmq.notify_insert_throttle t;
    -- the function as it is now (the catalog is read with a fresh snapshot)
    SELECT p.prosrc INTO current_body
      FROM pg_proc p
     WHERE p.oid = 'pgmq._notify_wanted(text)'::regprocedure;
    IF current_setting('transaction_isolation') <> 'read committed'
       AND current_body ~ '^SELECT \$1 = ANY \(.*::text\[\]\)$' THEN
        EXECUTE 'SELECT ' || (regexp_match(current_body, '^SELECT \$1 = ANY \((.*)::text\[\]\)$'))[1]
                || '::text[]' INTO current_queues;
        SELECT array_agg(DISTINCT x) INTO wanted
          FROM (SELECT unnest(wanted) UNION SELECT unnest(current_queues)) AS u(x);
    END IF;
    IF wanted IS NULL THEN
        body := 'SELECT false';
    ELSE
        body := format('SELECT $1 = ANY (%s::text[])', quote_literal(wanted::text));
    END IF;
    IF body IS DISTINCT FROM current_body THEN
        EXECUTE format('CREATE OR REPLACE FUNCTION pgmq._notify_wanted(qtable TEXT) RETURNS boolean '
                       'LANGUAGE SQL IMMUTABLE AS %L', body);
    END IF;
END;
$$ LANGUAGE plpgsql;
REVOKE ALL ON FUNCTION pgmq._notify_wanted_set() FROM PUBLIC;

CREATE OR REPLACE FUNCTION pgmq._notify_wanted_trigger()
RETURNS trigger SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM pgmq._notify_wanted_set();
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE TRIGGER notify_wanted
    AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF queue_name ON pgmq.notify_insert_throttle
    FOR EACH STATEMENT EXECUTE FUNCTION pgmq._notify_wanted_trigger();

SELECT pgmq._notify_wanted_set();

-- pgmq's notification of a send, when enable_notify_insert asked for it:
-- 'pgmq.q_<name>.INSERT', at most one per throttle_interval_ms (pgmq's
-- trigger on its table; here the send gives it, once per call, and only
-- when pgmq._notify_wanted(qtable)).  As the extension's owner: a sender
-- needs no privilege on the throttle table.
CREATE OR REPLACE FUNCTION pgmq._notify_insert(qtable TEXT)
RETURNS void SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE pgmq.notify_insert_throttle t
       SET last_notified_at = clock_timestamp()
     WHERE lower('q_' || t.queue_name) = qtable
       AND (t.throttle_interval_ms = 0
            OR clock_timestamp() - t.last_notified_at >= t.throttle_interval_ms * interval '1 millisecond');
    IF FOUND THEN
        PERFORM pg_notify('pgmq.' || qtable || '.INSERT', NULL);
    END IF;
END;
$$ LANGUAGE plpgsql;

-- send: the implementation.  delay: when the message becomes visible.
CREATE OR REPLACE FUNCTION pgmq.send(
    queue_name TEXT,
    msg JSONB,
    headers JSONB,
    delay TIMESTAMP WITH TIME ZONE
) RETURNS SETOF BIGINT AS $$
DECLARE
    qtable TEXT := pgmq.format_table_name(queue_name, 'q');
    qe TEXT := 'pgmq.' || qtable;
    seq REGCLASS;
    id BIGINT; qe_id BIGINT; first_id BIGINT; dedup TEXT;  -- (one line: pgmq's line numbers below)
BEGIN
    IF delay IS NULL THEN
        -- pgmq's vt column is NOT NULL
        RAISE EXCEPTION 'null value in column "vt" of relation "%" violates not-null constraint', qtable
            USING ERRCODE = 'not_null_violation';
    END IF;
    seq := format('pgmq.%I', qtable || '_msg_id_seq')::regclass;
    id := nextval(seq);
    -- queue_ext_pgmq's exact dedup (docs/pgmq.md, "Extensions"): queue_ext's
    -- dedup ids are the database's, so the queue and its sequence (a queue
    -- made again is another) are part of it
    dedup := CASE WHEN jsonb_typeof(headers) = 'object'
                  THEN qe || ':' || seq::oid::text || ':' || (headers->>'x-pgmq-dedup-id') END;
    IF msg IS NULL THEN
        qe_id := mq.send(qe, ''::bytea, headers => headers,
                         deliver_at => CASE WHEN delay > clock_timestamp() THEN delay END,
                         key => pgmq._key(qe, seq, id), dedup_id => dedup,
                         content_type => 'application/x-pgmq-null');
    ELSE
        qe_id := mq.send(qe, msg, headers => headers,
                         deliver_at => CASE WHEN delay > clock_timestamp() THEN delay END,
                         key => pgmq._key(qe, seq, id), dedup_id => dedup);
    END IF;
    IF dedup IS NOT NULL THEN
        -- a dedup id sent before within mq.dedup_window: queue_ext stored
        -- nothing and gave the first message, whose msg_id is returned
        -- (the id taken from the sequence is left unused)
        SELECT pgmq._msg_id(m.key) INTO first_id FROM mq.message(qe_id) m;
        IF first_id IS DISTINCT FROM id AND first_id IS NOT NULL THEN
            RETURN NEXT first_id;
            RETURN;
        END IF;
    END IF;
    IF pgmq._notify_wanted(qtable) THEN
        PERFORM pgmq._notify_insert(qtable);
    END IF;
    RETURN NEXT id;
END;
$$ LANGUAGE plpgsql;

-- The other forms of send (and of send_batch below) are PL/pgSQL, where
-- pgmq's are SQL: a set-returning SQL function is not inlined, so each call
-- parsed and planned its one statement again, a tenth of a send; PL/pgSQL
-- keeps the plan for the session.  (What they return and raise is the same;
-- only an error's CONTEXT names the PL/pgSQL function.)
CREATE OR REPLACE FUNCTION pgmq.send(queue_name TEXT, msg JSONB)
RETURNS SETOF BIGINT AS $$
BEGIN
    RETURN QUERY SELECT * FROM pgmq.send(queue_name, msg, NULL, clock_timestamp());
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.send(queue_name TEXT, msg JSONB, headers JSONB)
RETURNS SETOF BIGINT AS $$
BEGIN
    RETURN QUERY SELECT * FROM pgmq.send(queue_name, msg, headers, clock_timestamp());
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.send(queue_name TEXT, msg JSONB, delay INTEGER)
RETURNS SETOF BIGINT AS $$
BEGIN
    RETURN QUERY SELECT * FROM pgmq.send(queue_name, msg, NULL, clock_timestamp() + make_interval(secs => delay));
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.send(queue_name TEXT, msg JSONB, delay TIMESTAMP WITH TIME ZONE)
RETURNS SETOF BIGINT AS $$
BEGIN
    RETURN QUERY SELECT * FROM pgmq.send(queue_name, msg, NULL, delay);
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.send(queue_name TEXT, msg JSONB, headers JSONB, delay INTEGER)
RETURNS SETOF BIGINT AS $$
BEGIN
    RETURN QUERY SELECT * FROM pgmq.send(queue_name, msg, headers, clock_timestamp() + make_interval(secs => delay));
END;
$$ LANGUAGE plpgsql;

-- pgmq's checks of send_batch's arguments: messages, and as many headers
-- as messages (or NULL)
CREATE OR REPLACE FUNCTION pgmq._validate_batch_params(msgs JSONB[], headers JSONB[])
RETURNS void AS $$
BEGIN
    IF msgs IS NULL OR cardinality(msgs) = 0 THEN
        RAISE EXCEPTION 'msgs cannot be NULL or empty';
    END IF;
    IF headers IS NOT NULL AND cardinality(headers) <> cardinality(msgs) THEN
        RAISE EXCEPTION 'headers array length (%) must match msgs array length (%)',
            cardinality(headers), cardinality(msgs);
    END IF;
END;
$$ LANGUAGE plpgsql;

-- _send_batch: the implementation, unchecked (as pgmq's).  As pgmq's
-- INSERT ... SELECT unnest(msgs), unnest(headers): with fewer headers than
-- messages the rest get NULL, with more, the extra headers make messages
-- with a NULL body.
--
-- The common call (no headers, no NULL message, one-dimensional) goes
-- straight to mq.send_batch with msgs as they are: pairing messages and
-- headers again and the checks below cost a fifth of a batch of 100.
CREATE OR REPLACE FUNCTION pgmq._send_batch(
    queue_name TEXT,
    msgs JSONB[],
    headers JSONB[],
    delay TIMESTAMP WITH TIME ZONE
) RETURNS SETOF BIGINT AS $$
DECLARE
    qtable TEXT := pgmq.format_table_name(queue_name, 'q');
    qe TEXT := 'pgmq.' || qtable;
    seq REGCLASS;
    bodies JSONB[] := msgs;
    hdrs JSONB[];
    ids BIGINT[];
    keys TEXT[];
    r record;
BEGIN
    IF headers IS NOT NULL OR delay IS NULL OR array_ndims(msgs) IS DISTINCT FROM 1
       OR array_position(msgs, NULL) IS NOT NULL THEN
        SELECT array_agg(u.m ORDER BY u.ord), array_agg(u.h ORDER BY u.ord)
          INTO bodies, hdrs
          FROM unnest(msgs, coalesce(headers, ARRAY[]::jsonb[])) WITH ORDINALITY AS u(m, h, ord);
        IF bodies IS NULL THEN
            RETURN;
        END IF;
        IF delay IS NULL OR array_position(bodies, NULL) IS NOT NULL
           OR (array_position(hdrs, NULL) IS NOT NULL
               AND EXISTS (SELECT 1 FROM unnest(hdrs) AS x WHERE x IS NOT NULL))
           OR EXISTS (SELECT 1 FROM unnest(hdrs) AS x
                       WHERE jsonb_typeof(x) = 'object' AND x ? 'x-pgmq-dedup-id') THEN
            -- a NULL message (stored with its own content type), headers for
            -- some messages only, a dedup id, or pgmq's error for a NULL
            -- delay: one message at a time
            FOR r IN SELECT m, h FROM unnest(bodies, hdrs) AS u(m, h) LOOP
                RETURN QUERY SELECT * FROM pgmq.send(queue_name, r.m, r.h, delay);
            END LOOP;
            RETURN;
        END IF;
        IF array_position(hdrs, NULL) IS NOT NULL THEN
            hdrs := NULL;
        END IF;
    END IF;
    -- one mq.send_batch call: ids from the queue's sequence, in order (the
    -- function scan gives its rows, and nextval runs, in order), and the
    -- keys pgmq._key makes, both in one statement
    seq := format('pgmq.%I', qtable || '_msg_id_seq')::regclass;
    SELECT array_agg(s.i), array_agg(pgmq._key(qe, seq, s.i)) INTO ids, keys
      FROM (SELECT nextval(seq) FROM generate_series(1, cardinality(bodies))) AS s(i);
    PERFORM mq.send_batch(qe, bodies, headers => hdrs,
                          delay => CASE WHEN delay > clock_timestamp() THEN delay - clock_timestamp() END,
                          keys => keys);
    IF pgmq._notify_wanted(qtable) THEN
        PERFORM pgmq._notify_insert(qtable);
    END IF;
    RETURN QUERY SELECT unnest(ids);
END;
$$ LANGUAGE plpgsql;

-- send_batch: the arguments checked as pgmq checks them (by its
-- _validate_batch_params, whose errors and their CONTEXT are pgmq's; a call
-- with messages and no headers passes them, and is not made).  The forms
-- without headers check the one thing that can fail for them and call
-- _send_batch themselves: a PL/pgSQL level less (its call, its statement's
-- plan, and its RETURN QUERY's copy of the ids) on pgmq's most common call.
CREATE OR REPLACE FUNCTION pgmq.send_batch(
    queue_name TEXT,
    msgs JSONB[],
    headers JSONB[],
    delay TIMESTAMP WITH TIME ZONE
) RETURNS SETOF BIGINT AS $$
BEGIN
    IF headers IS NOT NULL OR coalesce(cardinality(msgs), 0) = 0 THEN
        PERFORM pgmq._validate_batch_params(msgs, headers);
    END IF;
    RETURN QUERY SELECT * FROM pgmq._send_batch(queue_name, msgs, headers, delay);
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.send_batch(queue_name TEXT, msgs JSONB[])
RETURNS SETOF BIGINT AS $$
BEGIN
    IF coalesce(cardinality(msgs), 0) = 0 THEN
        PERFORM pgmq._validate_batch_params(msgs, NULL);
    END IF;
    RETURN QUERY SELECT * FROM pgmq._send_batch(queue_name, msgs, NULL, clock_timestamp());
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.send_batch(queue_name TEXT, msgs JSONB[], headers JSONB[])
RETURNS SETOF BIGINT AS $$
BEGIN
    RETURN QUERY SELECT * FROM pgmq.send_batch(queue_name, msgs, headers, clock_timestamp());
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.send_batch(queue_name TEXT, msgs JSONB[], delay INTEGER)
RETURNS SETOF BIGINT AS $$
BEGIN
    IF coalesce(cardinality(msgs), 0) = 0 THEN
        PERFORM pgmq._validate_batch_params(msgs, NULL);
    END IF;
    RETURN QUERY SELECT * FROM pgmq._send_batch(queue_name, msgs, NULL, clock_timestamp() + make_interval(secs => delay));
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.send_batch(queue_name TEXT, msgs JSONB[], delay TIMESTAMP WITH TIME ZONE)
RETURNS SETOF BIGINT AS $$
BEGIN
    IF coalesce(cardinality(msgs), 0) = 0 THEN
        PERFORM pgmq._validate_batch_params(msgs, NULL);
    END IF;
    RETURN QUERY SELECT * FROM pgmq._send_batch(queue_name, msgs, NULL, delay);
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.send_batch(queue_name TEXT, msgs JSONB[], headers JSONB[], delay INTEGER)
RETURNS SETOF BIGINT AS $$
BEGIN
    RETURN QUERY SELECT * FROM pgmq.send_batch(queue_name, msgs, headers, clock_timestamp() + make_interval(secs => delay));
END;
$$ LANGUAGE plpgsql;

------------------------------------------------------------
-- Reading
------------------------------------------------------------

------------------------------------------------------------
-- Dead-lettering after N reads (queue_ext_pgmq's, not pgmq's:
-- pgmq.set_max_reads, table pgmq.max_reads)
------------------------------------------------------------

-- The setting of queue qe (no row: none).  As the extension's owner: a
-- reader needs no privilege on the table.  PL/pgSQL: every read of a
-- message read before calls it, and a SECURITY DEFINER SQL function was
-- parsed and planned again each time, some 40 % of such a read.
CREATE OR REPLACE FUNCTION pgmq._max_reads(qe TEXT)
RETURNS TABLE (max_reads INTEGER, dead_letter_queue TEXT)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY
        SELECT m.max_reads, m.dead_letter_queue::text FROM pgmq.max_reads m
         WHERE 'pgmq.' || lower('q_' || m.queue_name) = qe;
END
$$;

-- Whether a read returns message id (queue_ext id qe_id) of queue
-- queue_name that it has just read for the read_ct-th time: false when
-- that is past the queue's max_reads, and then the message has been moved,
-- in the read's transaction, to the dead-letter queue (its message and
-- headers, with x-pgmq-dead-letter-queue, x-pgmq-original-msg-id and
-- x-pgmq-read-ct; without x-pgmq-dedup-id, which is the first queue's) or
-- archived.  The reads call it only for a message read before (read_ct
-- above 1), so that a queue without the setting pays nothing for it on a
-- first read.  As the caller: the move needs the caller's rights.
CREATE OR REPLACE FUNCTION pgmq._read_keeps(queue_name TEXT, qe TEXT, id BIGINT, qe_id BIGINT,
                                            read_ct INTEGER, message JSONB, headers JSONB)
RETURNS boolean AS $$
DECLARE
    s record;
BEGIN
    SELECT * INTO s FROM pgmq._max_reads(qe);
    IF NOT FOUND OR read_ct <= s.max_reads THEN
        RETURN true;
    END IF;
    IF s.dead_letter_queue IS NULL THEN
        PERFORM pgmq.archive(queue_name, id);
    ELSE
        PERFORM pgmq.send(s.dead_letter_queue, message,
                          coalesce(headers, '{}'::jsonb) - 'x-pgmq-dedup-id'
                          || jsonb_build_object('x-pgmq-dead-letter-queue', queue_name,
                                                'x-pgmq-original-msg-id', id,
                                                'x-pgmq-read-ct', read_ct));
        PERFORM mq.ack(qe, ARRAY[qe_id]);
    END IF;
    RETURN false;
END;
$$ LANGUAGE plpgsql;

-- pgmq.set_max_reads(queue_name, max_reads, dead_letter_queue): from now
-- on a read that would return a message of queue_name for the
-- (max_reads + 1)-th time moves it to dead_letter_queue instead (a pgmq
-- queue; NULL: archives it) and returns the others.  max_reads NULL takes
-- the setting away.
CREATE OR REPLACE FUNCTION pgmq.set_max_reads(queue_name TEXT, max_reads INTEGER,
                                              dead_letter_queue TEXT DEFAULT NULL)
RETURNS void AS $$
DECLARE
    v_queue TEXT;
    v_dlq TEXT;
BEGIN
    SELECT m.queue_name INTO v_queue FROM pgmq.meta m
     WHERE lower(m.queue_name) = lower(set_max_reads.queue_name);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue "%" does not exist', set_max_reads.queue_name
            USING ERRCODE = 'undefined_object';
    END IF;
    IF set_max_reads.max_reads IS NULL THEN
        DELETE FROM pgmq.max_reads m WHERE m.queue_name = v_queue;
        RETURN;
    END IF;
    IF set_max_reads.max_reads < 1 THEN
        RAISE EXCEPTION 'max_reads must be at least 1, got %', set_max_reads.max_reads
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF set_max_reads.dead_letter_queue IS NOT NULL THEN
        SELECT m.queue_name INTO v_dlq FROM pgmq.meta m
         WHERE lower(m.queue_name) = lower(set_max_reads.dead_letter_queue);
        IF NOT FOUND THEN
            RAISE EXCEPTION 'dead-letter queue "%" does not exist', set_max_reads.dead_letter_queue
                USING ERRCODE = 'undefined_object';
        END IF;
        IF v_dlq = v_queue THEN
            RAISE EXCEPTION 'queue "%" cannot be its own dead-letter queue', v_queue
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    INSERT INTO pgmq.max_reads (queue_name, max_reads, dead_letter_queue)
    VALUES (v_queue, set_max_reads.max_reads, v_dlq)
    ON CONFLICT ON CONSTRAINT max_reads_queue_name_key
    DO UPDATE SET max_reads = EXCLUDED.max_reads, dead_letter_queue = EXCLUDED.dead_letter_queue;
END;
$$ LANGUAGE plpgsql;

-- Every queue's setting
CREATE OR REPLACE FUNCTION pgmq.list_max_reads()
RETURNS TABLE (queue_name VARCHAR, max_reads INTEGER, dead_letter_queue VARCHAR)
LANGUAGE SQL STABLE AS $$
  SELECT m.queue_name, m.max_reads, m.dead_letter_queue FROM pgmq.max_reads m ORDER BY m.queue_name
$$;

-- Messages whose body contains conditional, taken by id from the first
-- 10000 ready ones (queue_ext filters nothing on its own for a consume)
CREATE OR REPLACE FUNCTION pgmq._read_conditional(queue_name TEXT, qe TEXT, vt INTEGER, qty INTEGER,
                                                  conditional JSONB)
RETURNS SETOF pgmq.message_record AS $$
DECLARE
    ids BIGINT[];
    until TIMESTAMPTZ := clock_timestamp() + make_interval(secs => vt);
BEGIN
    SELECT array_agg(c.msg_id) INTO ids
      FROM (SELECT b.msg_id FROM mq.browse(qe, 10000) b
             WHERE pgmq._message(b.body, b.properties) @> conditional
             LIMIT qty) c;
    IF ids IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT pgmq._msg_id(m.key), l.delivery_count, m.published_at, clock_timestamp(), until,
               pgmq._message(m.body, m.properties), m.headers
          FROM mq.lease_ids(qe, ids, pgmq._lease(vt), deliver => true) l,
               LATERAL mq.message(l.msg_id) m
         WHERE l.delivery_count <= 1
            OR pgmq._read_keeps(queue_name, qe, pgmq._msg_id(m.key), l.msg_id, l.delivery_count,
                                pgmq._message(m.body, m.properties), m.headers)
         ORDER BY l.msg_id;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.read(
    queue_name TEXT,
    vt INTEGER,
    qty INTEGER,
    conditional JSONB DEFAULT '{}'
)
RETURNS SETOF pgmq.message_record AS $$
DECLARE
    qe TEXT := pgmq._queue(queue_name);
    until TIMESTAMPTZ := clock_timestamp() + make_interval(secs => vt);
BEGIN
    IF qty IS NOT NULL AND qty < 1 THEN
        RETURN;
    END IF;
    IF conditional IS NOT NULL AND conditional <> '{}'::jsonb THEN
        RETURN QUERY SELECT * FROM pgmq._read_conditional(queue_name, qe, vt, least(coalesce(qty, 10000), 10000), conditional);
        RETURN;
    END IF;
    RETURN QUERY
        SELECT pgmq._msg_id(c.key), c.delivery_count, c.published_at, clock_timestamp(), until,
               pgmq._message(c.body, c.properties), c.headers
          FROM mq.consume(qe, least(coalesce(qty, 10000), 10000), lease => pgmq._lease(vt),
                          session_bound => false) c
         WHERE c.delivery_count <= 1
            OR pgmq._read_keeps(queue_name, qe, pgmq._msg_id(c.key), c.msg_id, c.delivery_count,
                                pgmq._message(c.body, c.properties), c.headers);
END;
$$ LANGUAGE plpgsql;

-- Waits up to max_poll_seconds for messages: queue_ext wakes the wait at
-- once when a publisher commits; leases that run out (and conditional
-- reads) are looked at every poll_interval_ms
CREATE OR REPLACE FUNCTION pgmq.read_with_poll(
    queue_name TEXT,
    vt INTEGER,
    qty INTEGER,
    max_poll_seconds INTEGER DEFAULT 5,
    poll_interval_ms INTEGER DEFAULT 100,
    conditional JSONB DEFAULT '{}'
)
RETURNS SETOF pgmq.message_record AS $$
DECLARE
    qe TEXT := pgmq._queue(queue_name);
    stop_at TIMESTAMPTZ := clock_timestamp() + make_interval(secs => max_poll_seconds);
    wait INTERVAL;
    until TIMESTAMPTZ;
BEGIN
    IF qty IS NOT NULL AND qty < 1 THEN
        RETURN;
    END IF;
    LOOP
        IF clock_timestamp() >= stop_at THEN
            RETURN;
        END IF;
        IF conditional IS NOT NULL AND conditional <> '{}'::jsonb THEN
            RETURN QUERY SELECT * FROM pgmq._read_conditional(queue_name, qe, vt, least(coalesce(qty, 10000), 10000), conditional);
            IF FOUND THEN
                RETURN;
            END IF;
            PERFORM pg_sleep(poll_interval_ms::numeric / 1000);
        ELSE
            wait := least(stop_at - clock_timestamp(),
                          make_interval(secs => greatest(poll_interval_ms, 1)::double precision / 1000));
            IF wait < interval '0' THEN
                wait := interval '0';
            END IF;
            RETURN QUERY
                SELECT pgmq._msg_id(c.key), c.delivery_count, c.published_at, clock_timestamp(),
                       clock_timestamp() + make_interval(secs => vt),
                       pgmq._message(c.body, c.properties), c.headers
                  FROM mq.consume(qe, least(coalesce(qty, 10000), 10000), wait => wait,
                                  lease => pgmq._lease(vt), session_bound => false) c
                 WHERE c.delivery_count <= 1
                    OR pgmq._read_keeps(queue_name, qe, pgmq._msg_id(c.key), c.msg_id, c.delivery_count,
                                        pgmq._message(c.body, c.properties), c.headers);
            IF FOUND THEN
                RETURN;
            END IF;
        END IF;
    END LOOP;
END;
$$ LANGUAGE plpgsql;

-- pop: read and delete the first qty visible messages (up to 10000)
CREATE OR REPLACE FUNCTION pgmq.pop(queue_name TEXT, qty INTEGER DEFAULT 1)
RETURNS SETOF pgmq.message_record AS $$
BEGIN
    IF qty IS NOT NULL AND qty < 1 THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT pgmq._msg_id(c.key), c.delivery_count - 1, c.published_at,
               pgmq._last_read(c.delivery_count - 1, c.published_at), c.published_at,
               pgmq._message(c.body, c.properties), c.headers
          FROM mq.consume(pgmq._queue(queue_name), least(coalesce(qty, 10000), 10000),
                          auto_ack => true, session_bound => false) c;
END;
$$ LANGUAGE plpgsql;

------------------------------------------------------------
-- FIFO reads by message group (pgmq's later releases: the group is the
-- header x-pgmq-group, '_default_fifo_group' without it)
------------------------------------------------------------

-- Every message of queue qe that a FIFO read must consider: pgmq id,
-- queue_ext id, group, and whether it is visible (ready) -- leased and
-- delayed ones hold their group back.  Up to 10000 of each kind.
CREATE OR REPLACE FUNCTION pgmq._fifo_state(qe TEXT)
RETURNS TABLE (id BIGINT, qe_id BIGINT, grp TEXT, visible BOOLEAN)
LANGUAGE SQL STABLE AS $$
  SELECT pgmq._msg_id(b.key), b.msg_id,
         coalesce(b.headers->>'x-pgmq-group', '_default_fifo_group'), true
    FROM mq.browse(qe, 10000) b
  UNION ALL
  SELECT pgmq._msg_id(m.key), m.msg_id,
         coalesce(m.headers->>'x-pgmq-group', '_default_fifo_group'), false
    FROM mq.in_flight(qe, 10000) f, LATERAL mq.message(f.msg_id) m
  UNION ALL
  SELECT pgmq._msg_id(m.key), m.msg_id,
         coalesce(m.headers->>'x-pgmq-group', '_default_fifo_group'), false
    FROM pgmq._delayed(qe) d, LATERAL mq.message(d.msg_id) m
$$;

-- The messages a FIFO read of mode 'grouped', 'rr' or 'head' takes, in
-- the order it returns them (ord), from groups only_groups (NULL: all) but
-- skip_groups.
-- A group is readable when its oldest message is visible; from it the
-- read may take the visible messages up to the first one that is not
-- (strict order: nothing after a message in flight).  'grouped' fills
-- the batch from the group with the oldest head first (SQS FIFO),
-- 'rr' takes the first of every group, then the second, ... (groups by
-- their heads' age), 'head' only the first of each group.
CREATE OR REPLACE FUNCTION pgmq._fifo_pick(qe TEXT, qty INTEGER, mode TEXT, only_groups TEXT[],
                                skip_groups TEXT[])
RETURNS TABLE (qe_id BIGINT, ord BIGINT, grp TEXT)
LANGUAGE SQL STABLE AS $$
  WITH s AS (
    SELECT st.*,
           row_number() OVER w AS rnk,
           count(*) FILTER (WHERE NOT st.visible) OVER w AS hidden,
           min(st.id) OVER (PARTITION BY st.grp) AS head
      FROM pgmq._fifo_state(qe) st
    WINDOW w AS (PARTITION BY st.grp ORDER BY st.id)
  ), readable AS (
    SELECT s.*, dense_rank() OVER (ORDER BY s.head) AS prio
      FROM s
     WHERE s.hidden = 0 AND (only_groups IS NULL OR s.grp = ANY (only_groups))
       AND NOT s.grp = ANY (skip_groups)
       AND (mode <> 'head' OR s.rnk = 1)
  )
  SELECT r.qe_id,
         row_number() OVER (ORDER BY CASE WHEN mode = 'rr' THEN r.rnk ELSE 0 END, r.prio, r.rnk),
         r.grp
    FROM readable r
   ORDER BY 2
   LIMIT qty
$$;

-- A FIFO read: the groups it would take messages from are locked for the
-- transaction (a transaction-level advisory lock per queue and group,
-- tried, not waited for: a group another FIFO read holds is skipped and
-- the pick made again without it), then the messages are leased by id.
-- Another read may have leased messages of a group and committed between
-- our pick and our lock: when every group was locked at the first try and
-- no message of them is in flight now, the pick stands; otherwise the
-- state is read again (a pick reads the whole queue: at 6,000 messages
-- that second read was half of the call)
CREATE OR REPLACE FUNCTION pgmq._read_grouped(queue_name TEXT, vt INTEGER, qty INTEGER, mode TEXT)
RETURNS SETOF pgmq.message_record AS $$
DECLARE
    qe TEXT := pgmq._queue(queue_name);
    n INTEGER := least(coalesce(qty, 10000), 10000);
    until TIMESTAMPTZ := clock_timestamp() + make_interval(secs => vt);
    mine TEXT[] := '{}';
    busy TEXT[] := '{}';
    g TEXT;
    more BOOLEAN := true;
    rounds INTEGER := 0;
    pick_ids BIGINT[];
    pick_grps TEXT[];
    ids BIGINT[];
BEGIN
    IF n < 1 THEN
        RETURN;
    END IF;
    PERFORM pgmq._check_queue(queue_name);
    WHILE more LOOP
        more := false;
        rounds := rounds + 1;
        SELECT array_agg(p.qe_id ORDER BY p.ord), array_agg(p.grp ORDER BY p.ord)
          INTO pick_ids, pick_grps
          FROM pgmq._fifo_pick(qe, n, mode, NULL, busy) p;
        FOR g IN SELECT u.grp FROM unnest(pick_grps) WITH ORDINALITY AS u(grp, o)
                  GROUP BY u.grp ORDER BY min(u.o) LOOP
            CONTINUE WHEN g = ANY (mine);
            IF pg_try_advisory_xact_lock(hashtextextended('pgmq.fifo ' || qe || ' ' || g, 0)) THEN
                mine := mine || g;
            ELSE
                busy := busy || g;
                more := true;
            END IF;
        END LOOP;
    END LOOP;
    IF cardinality(mine) = 0 THEN
        RETURN;
    END IF;
    IF rounds = 1 AND NOT EXISTS (
            SELECT 1 FROM mq.in_flight(qe, 10000) f, LATERAL mq.message(f.msg_id) m
             WHERE coalesce(m.headers->>'x-pgmq-group', '_default_fifo_group') = ANY (mine)) THEN
        ids := pick_ids;
    ELSE
        ids := ARRAY(SELECT p.qe_id FROM pgmq._fifo_pick(qe, n, mode, mine, '{}') p ORDER BY p.ord);
    END IF;
    RETURN QUERY
        SELECT pgmq._msg_id(m.key), l.delivery_count, m.published_at, clock_timestamp(), until,
               pgmq._message(m.body, m.properties), m.headers
          FROM unnest(ids) WITH ORDINALITY AS u(id, o)
          JOIN mq.lease_ids(qe, ids, pgmq._lease(vt), deliver => true) l ON l.msg_id = u.id,
               LATERAL mq.message(l.msg_id) m
         WHERE l.delivery_count <= 1
            OR pgmq._read_keeps(queue_name, qe, pgmq._msg_id(m.key), l.msg_id, l.delivery_count,
                                pgmq._message(m.body, m.properties), m.headers)
         ORDER BY u.o;
END;
$$ LANGUAGE plpgsql;

-- Poll a FIFO read every poll_interval_ms until it returns messages or
-- max_poll_seconds have passed
CREATE OR REPLACE FUNCTION pgmq._read_grouped_poll(queue_name TEXT, vt INTEGER, qty INTEGER, mode TEXT,
                                        max_poll_seconds INTEGER, poll_interval_ms INTEGER)
RETURNS SETOF pgmq.message_record AS $$
DECLARE
    stop_at TIMESTAMPTZ := clock_timestamp() + make_interval(secs => max_poll_seconds);
BEGIN
    LOOP
        IF clock_timestamp() >= stop_at THEN
            RETURN;
        END IF;
        RETURN QUERY SELECT * FROM pgmq._read_grouped(queue_name, vt, qty, mode);
        IF FOUND THEN
            RETURN;
        END IF;
        PERFORM pg_sleep(poll_interval_ms::numeric / 1000);
    END LOOP;
END;
$$ LANGUAGE plpgsql;

-- read_grouped: SQS FIFO-style, as many messages as it can from the group
-- with the oldest head first
CREATE OR REPLACE FUNCTION pgmq.read_grouped(queue_name TEXT, vt INTEGER, qty INTEGER)
RETURNS SETOF pgmq.message_record AS $$
    SELECT * FROM pgmq._read_grouped(queue_name, vt, qty, 'grouped');
$$ LANGUAGE sql;

CREATE OR REPLACE FUNCTION pgmq.read_grouped_with_poll(queue_name TEXT, vt INTEGER, qty INTEGER,
                                            max_poll_seconds INTEGER DEFAULT 5,
                                            poll_interval_ms INTEGER DEFAULT 100)
RETURNS SETOF pgmq.message_record AS $$
    SELECT * FROM pgmq._read_grouped_poll(queue_name, vt, qty, 'grouped',
                                          max_poll_seconds, poll_interval_ms);
$$ LANGUAGE sql;

-- read_grouped_rr: layered round robin across the groups
CREATE OR REPLACE FUNCTION pgmq.read_grouped_rr(queue_name TEXT, vt INTEGER, qty INTEGER)
RETURNS SETOF pgmq.message_record AS $$
    SELECT * FROM pgmq._read_grouped(queue_name, vt, qty, 'rr');
$$ LANGUAGE sql;

CREATE OR REPLACE FUNCTION pgmq.read_grouped_rr_with_poll(queue_name TEXT, vt INTEGER, qty INTEGER,
                                               max_poll_seconds INTEGER DEFAULT 5,
                                               poll_interval_ms INTEGER DEFAULT 100)
RETURNS SETOF pgmq.message_record AS $$
    SELECT * FROM pgmq._read_grouped_poll(queue_name, vt, qty, 'rr',
                                          max_poll_seconds, poll_interval_ms);
$$ LANGUAGE sql;

-- read_grouped_head: the oldest message of up to qty groups
CREATE OR REPLACE FUNCTION pgmq.read_grouped_head(queue_name TEXT, vt INTEGER, qty INTEGER)
RETURNS SETOF pgmq.message_record AS $$
    SELECT * FROM pgmq._read_grouped(queue_name, vt, qty, 'head');
$$ LANGUAGE sql;

CREATE OR REPLACE FUNCTION pgmq.read_grouped_head_with_poll(queue_name TEXT, vt INTEGER, qty INTEGER,
                                                 max_poll_seconds INTEGER DEFAULT 5,
                                                 poll_interval_ms INTEGER DEFAULT 100)
RETURNS SETOF pgmq.message_record AS $$
    SELECT * FROM pgmq._read_grouped_poll(queue_name, vt, qty, 'head',
                                          max_poll_seconds, poll_interval_ms);
$$ LANGUAGE sql;

-- pgmq's GIN index on headers for FIFO reads: queue_ext reads groups from
-- the queue's state, which needs none; the queue must exist
CREATE OR REPLACE FUNCTION pgmq.create_fifo_index(queue_name TEXT)
RETURNS void AS $$
BEGIN
    PERFORM pgmq._check_queue(queue_name);
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.create_fifo_indexes_all()
RETURNS void AS $$
    SELECT pgmq.create_fifo_index(m.queue_name) FROM pgmq.meta m;
$$ LANGUAGE sql;

------------------------------------------------------------
-- Topics (pgmq's later releases): send_topic sends a copy to every queue
-- bound with a matching pattern (each copy is a message of its queue, with
-- that queue's msg_id), in one transaction
------------------------------------------------------------
CREATE OR REPLACE FUNCTION pgmq.validate_routing_key(routing_key TEXT)
RETURNS BOOLEAN LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF routing_key IS NULL OR routing_key = '' THEN
        RAISE EXCEPTION 'routing_key cannot be NULL or empty';
    ELSIF length(routing_key) > 255 THEN
        RAISE EXCEPTION 'routing_key length cannot exceed 255 characters, got % characters', length(routing_key);
    ELSIF routing_key !~ '^[a-zA-Z0-9._-]+$' THEN
        RAISE EXCEPTION 'routing_key contains invalid characters. Only alphanumeric, dots, hyphens, and underscores are allowed. Got: %', routing_key;
    ELSIF left(routing_key, 1) = '.' THEN
        RAISE EXCEPTION 'routing_key cannot start with a dot. Got: %', routing_key;
    ELSIF right(routing_key, 1) = '.' THEN
        RAISE EXCEPTION 'routing_key cannot end with a dot. Got: %', routing_key;
    ELSIF strpos(routing_key, '..') > 0 THEN
        RAISE EXCEPTION 'routing_key cannot contain consecutive dots. Got: %', routing_key;
    END IF;
    RETURN true;
END;
$$;

CREATE OR REPLACE FUNCTION pgmq.validate_topic_pattern(pattern TEXT)
RETURNS BOOLEAN LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF pattern IS NULL OR pattern = '' THEN
        RAISE EXCEPTION 'pattern cannot be NULL or empty';
    ELSIF length(pattern) > 255 THEN
        RAISE EXCEPTION 'pattern length cannot exceed 255 characters, got % characters', length(pattern);
    ELSIF pattern !~ '^[a-zA-Z0-9._*#-]+$' THEN
        RAISE EXCEPTION 'pattern contains invalid characters. Only alphanumeric, dots, hyphens, underscores, *, and # are allowed. Got: %', pattern;
    ELSIF left(pattern, 1) = '.' THEN
        RAISE EXCEPTION 'pattern cannot start with a dot. Got: %', pattern;
    ELSIF right(pattern, 1) = '.' THEN
        RAISE EXCEPTION 'pattern cannot end with a dot. Got: %', pattern;
    ELSIF strpos(pattern, '..') > 0 THEN
        RAISE EXCEPTION 'pattern cannot contain consecutive dots. Got: %', pattern;
    ELSIF strpos(pattern, '**') > 0 THEN
        RAISE EXCEPTION 'pattern cannot contain consecutive stars (**). Use # for multi-segment matching. Got: %', pattern;
    ELSIF strpos(pattern, '##') > 0 THEN
        RAISE EXCEPTION 'pattern cannot contain consecutive hashes (##). A single # already matches zero or more segments. Got: %', pattern;
    ELSIF strpos(pattern, '*#') > 0 OR strpos(pattern, '#*') > 0 THEN
        RAISE EXCEPTION 'pattern cannot contain adjacent wildcards (*# or #*). Separate wildcards with dots. Got: %', pattern;
    END IF;
    RETURN true;
END;
$$;

CREATE OR REPLACE FUNCTION pgmq.bind_topic(pattern TEXT, queue_name TEXT)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pgmq.validate_topic_pattern(pattern);
    IF queue_name IS NULL OR queue_name = '' THEN
        RAISE EXCEPTION 'queue_name cannot be NULL or empty';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pgmq.meta m WHERE m.queue_name = bind_topic.queue_name) THEN
        RAISE EXCEPTION 'Queue "%" does not exist. Create the queue first using pgmq.create()', queue_name;
    END IF;
    INSERT INTO pgmq.topic_bindings (pattern, queue_name)
    VALUES (bind_topic.pattern, bind_topic.queue_name)
    ON CONFLICT ON CONSTRAINT topic_bindings_unique_pattern_queue DO NOTHING;
END;
$$;

CREATE OR REPLACE FUNCTION pgmq.unbind_topic(pattern TEXT, queue_name TEXT)
RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
    IF pattern IS NULL OR pattern = '' THEN
        RAISE EXCEPTION 'pattern cannot be NULL or empty';
    END IF;
    IF queue_name IS NULL OR queue_name = '' THEN
        RAISE EXCEPTION 'queue_name cannot be NULL or empty';
    END IF;
    DELETE FROM pgmq.topic_bindings b
     WHERE b.pattern = unbind_topic.pattern AND b.queue_name = unbind_topic.queue_name;
    RETURN FOUND;
END;
$$;

-- Which bindings a routing key matches, without sending
CREATE OR REPLACE FUNCTION pgmq.test_routing(routing_key TEXT)
RETURNS TABLE (pattern TEXT, queue_name TEXT, compiled_regex TEXT)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    PERFORM pgmq.validate_routing_key(routing_key);
    RETURN QUERY
        SELECT b.pattern, b.queue_name, b.compiled_regex
          FROM pgmq.topic_bindings b
         WHERE test_routing.routing_key ~ b.compiled_regex
         ORDER BY b.pattern;
END;
$$;

-- send_topic: the number of queues the message went to
CREATE OR REPLACE FUNCTION pgmq.send_topic(routing_key TEXT, msg JSONB, headers JSONB, delay INTEGER)
RETURNS INTEGER LANGUAGE plpgsql AS $$
DECLARE
    q TEXT;
    n INTEGER := 0;
BEGIN
    PERFORM pgmq.validate_routing_key(routing_key);
    IF msg IS NULL THEN
        RAISE EXCEPTION 'msg cannot be NULL';
    END IF;
    IF delay < 0 THEN
        RAISE EXCEPTION 'delay cannot be negative, got: %', delay;
    END IF;
    FOR q IN SELECT DISTINCT b.queue_name FROM pgmq.topic_bindings b
              WHERE send_topic.routing_key ~ b.compiled_regex ORDER BY 1 LOOP
        PERFORM pgmq.send(q, msg, headers, delay);
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;

CREATE OR REPLACE FUNCTION pgmq.send_topic(routing_key TEXT, msg JSONB)
RETURNS INTEGER LANGUAGE sql AS $$
    SELECT pgmq.send_topic(routing_key, msg, NULL, 0);
$$;

CREATE OR REPLACE FUNCTION pgmq.send_topic(routing_key TEXT, msg JSONB, delay INTEGER)
RETURNS INTEGER LANGUAGE sql AS $$
    SELECT pgmq.send_topic(routing_key, msg, NULL, delay);
$$;

-- send_batch_topic: (queue, msg_id) of every message sent
CREATE OR REPLACE FUNCTION pgmq.send_batch_topic(routing_key TEXT, msgs JSONB[], headers JSONB[],
                                      delay TIMESTAMP WITH TIME ZONE)
RETURNS TABLE (queue_name TEXT, msg_id BIGINT) LANGUAGE plpgsql AS $$
DECLARE
    q TEXT;
BEGIN
    PERFORM pgmq.validate_routing_key(routing_key);
    IF msgs IS NULL OR cardinality(msgs) = 0 THEN
        RAISE EXCEPTION 'msgs cannot be NULL or empty';
    END IF;
    IF headers IS NOT NULL AND cardinality(headers) <> cardinality(msgs) THEN
        RAISE EXCEPTION 'headers array length (%) must match msgs array length (%)',
            cardinality(headers), cardinality(msgs);
    END IF;
    FOR q IN SELECT DISTINCT b.queue_name FROM pgmq.topic_bindings b
              WHERE send_batch_topic.routing_key ~ b.compiled_regex ORDER BY 1 LOOP
        RETURN QUERY SELECT q, s.id FROM pgmq.send_batch(q, msgs, headers, delay) AS s(id);
    END LOOP;
END;
$$;

CREATE OR REPLACE FUNCTION pgmq.send_batch_topic(routing_key TEXT, msgs JSONB[])
RETURNS TABLE (queue_name TEXT, msg_id BIGINT) LANGUAGE sql AS $$
    SELECT * FROM pgmq.send_batch_topic(routing_key, msgs, NULL, clock_timestamp());
$$;

CREATE OR REPLACE FUNCTION pgmq.send_batch_topic(routing_key TEXT, msgs JSONB[], headers JSONB[])
RETURNS TABLE (queue_name TEXT, msg_id BIGINT) LANGUAGE sql AS $$
    SELECT * FROM pgmq.send_batch_topic(routing_key, msgs, headers, clock_timestamp());
$$;

CREATE OR REPLACE FUNCTION pgmq.send_batch_topic(routing_key TEXT, msgs JSONB[], delay INTEGER)
RETURNS TABLE (queue_name TEXT, msg_id BIGINT) LANGUAGE sql AS $$
    SELECT * FROM pgmq.send_batch_topic(routing_key, msgs, NULL,
                                        clock_timestamp() + make_interval(secs => delay));
$$;

CREATE OR REPLACE FUNCTION pgmq.send_batch_topic(routing_key TEXT, msgs JSONB[], delay TIMESTAMP WITH TIME ZONE)
RETURNS TABLE (queue_name TEXT, msg_id BIGINT) LANGUAGE sql AS $$
    SELECT * FROM pgmq.send_batch_topic(routing_key, msgs, NULL, delay);
$$;

CREATE OR REPLACE FUNCTION pgmq.send_batch_topic(routing_key TEXT, msgs JSONB[], headers JSONB[], delay INTEGER)
RETURNS TABLE (queue_name TEXT, msg_id BIGINT) LANGUAGE sql AS $$
    SELECT * FROM pgmq.send_batch_topic(routing_key, msgs, headers,
                                        clock_timestamp() + make_interval(secs => delay));
$$;

CREATE OR REPLACE FUNCTION pgmq.list_topic_bindings()
RETURNS TABLE (pattern TEXT, queue_name TEXT, bound_at TIMESTAMP WITH TIME ZONE, compiled_regex TEXT)
LANGUAGE sql STABLE AS $$
    SELECT b.pattern, b.queue_name, b.bound_at, b.compiled_regex
      FROM pgmq.topic_bindings b ORDER BY b.bound_at DESC, b.pattern, b.queue_name;
$$;

CREATE OR REPLACE FUNCTION pgmq.list_topic_bindings(queue_name TEXT)
RETURNS TABLE (pattern TEXT, queue_name TEXT, bound_at TIMESTAMP WITH TIME ZONE, compiled_regex TEXT)
LANGUAGE sql STABLE AS $$
    SELECT b.pattern, b.queue_name, b.bound_at, b.compiled_regex
      FROM pgmq.topic_bindings b WHERE b.queue_name = $1 ORDER BY b.bound_at DESC, b.pattern;
$$;

------------------------------------------------------------
-- Settling by msg_id
------------------------------------------------------------

-- Take the pgmq messages msg_ids of queue qe by id, whoever holds them,
-- leased to this transaction for a while: (pgmq id, queue_ext id,
-- read_ct, vt), in the order of msg_ids; delayed ones are not here.
CREATE OR REPLACE FUNCTION pgmq._take(qe TEXT, msg_ids BIGINT[], lease INTERVAL)
RETURNS TABLE (msg_id BIGINT, qe_id BIGINT, read_ct INTEGER, vt TIMESTAMPTZ) AS $$
BEGIN
    -- plpgsql, not SQL: its plan is kept for the session
    RETURN QUERY
    WITH ids AS (
        SELECT DISTINCT ON (u.id) u.id, u.ord, k.qe_id
          FROM unnest(msg_ids) WITH ORDINALITY AS u(id, ord)
          JOIN pgmq._qe_ids(qe, msg_ids) k ON k.msg_id = u.id
         ORDER BY u.id, u.ord
    )
    SELECT ids.id, l.msg_id, l.delivery_count, coalesce(l.was_until, clock_timestamp())
      FROM mq.lease_ids(qe, ARRAY(SELECT ids.qe_id FROM ids WHERE ids.qe_id IS NOT NULL ORDER BY ids.ord),
                        lease) l
      JOIN ids ON ids.qe_id = l.msg_id
     ORDER BY ids.ord;
END
$$ LANGUAGE plpgsql;

-- (the messages are found and acked by their keys in one call, C's
-- mq.ack_keys; delayed ones are left over and have their timers disarmed)
CREATE OR REPLACE FUNCTION pgmq.delete(queue_name TEXT, msg_ids BIGINT[])
RETURNS SETOF BIGINT AS $$
DECLARE
    qe TEXT := pgmq._queue(queue_name);
    seq OID := pgmq._seq(qe);
    taken BIGINT[];
    r record;
BEGIN
    IF msg_ids IS NULL THEN
        RETURN;
    END IF;
    SELECT array_agg(pgmq._msg_id(a.key)) INTO taken
      FROM mq.ack_keys(qe, ARRAY(SELECT pgmq._key(qe, seq, u)
                                   FROM unnest(msg_ids) AS u
                                  WHERE u IS NOT NULL AND seq IS NOT NULL)) a;
    IF taken IS NOT NULL THEN
        RETURN QUERY SELECT unnest(taken);
        IF cardinality(taken) >= cardinality(msg_ids) THEN
            RETURN;
        END IF;
    END IF;
    -- delayed messages: disarm their timers; a message sent before the
    -- update from 0.1 is acked by its key of 0.1
    FOR r IN SELECT u.id, pgmq._qe_id(qe, u.id) AS qe_id FROM unnest(msg_ids) AS u(id)
              WHERE u.id <> ALL (coalesce(taken, ARRAY[]::bigint[])) LOOP
        IF r.qe_id IS NOT NULL
           AND (pgmq._cancel(qe, r.qe_id)
                OR r.id <= pgmq._legacy_upto(seq)
                   AND EXISTS (SELECT 1 FROM mq.ack_keys(qe, ARRAY[pgmq._key_legacy(qe, seq, r.id)]))) THEN
            RETURN NEXT r.id;
        END IF;
    END LOOP;
END;
$$ LANGUAGE plpgsql;

-- (plpgsql, not SQL: its plan is kept for the session.)  pgmq's usual
-- loop deletes one message it has read: that is one mq.ack_keys here, and
-- only a message left over (delayed, or none) goes through the array form.
CREATE OR REPLACE FUNCTION pgmq.delete(queue_name TEXT, msg_id BIGINT)
RETURNS BOOLEAN AS $$
DECLARE
    qe TEXT := pgmq._queue(queue_name);
    seq OID := pgmq._seq(qe);
BEGIN
    IF msg_id IS NOT NULL AND seq IS NOT NULL
       AND EXISTS (SELECT 1 FROM mq.ack_keys(qe, ARRAY[pgmq._key(qe, seq, msg_id)])) THEN
        RETURN true;
    END IF;
    RETURN EXISTS (SELECT 1 FROM pgmq.delete(queue_name, ARRAY[msg_id]));
END
$$ LANGUAGE plpgsql;

-- archive: the message goes to pgmq.a_<name> and leaves the queue, in the
-- caller's transaction
CREATE OR REPLACE FUNCTION pgmq.archive(queue_name TEXT, msg_ids BIGINT[])
RETURNS SETOF BIGINT AS $$
DECLARE
    qe TEXT := pgmq._queue(queue_name);
    atable TEXT := pgmq.format_table_name(queue_name, 'a');
    taken BIGINT[] := ARRAY[]::bigint[];
    taken_qe BIGINT[] := ARRAY[]::bigint[];
    r record;
    qe_id BIGINT;
    due TIMESTAMPTZ;
BEGIN
    IF msg_ids IS NULL THEN
        RETURN;
    END IF;
    FOR r IN SELECT k.msg_id, k.qe_id, k.read_ct, k.vt, m.published_at,
                    pgmq._message(m.body, m.properties) AS message, m.headers
               FROM pgmq._take(qe, msg_ids, interval '5 minutes') k,
                    LATERAL mq.message(k.qe_id) m LOOP
        EXECUTE format('INSERT INTO pgmq.%I (msg_id, read_ct, enqueued_at, last_read_at, vt, message, headers)
                        VALUES ($1, $2, $3, pgmq._last_read($2, $3), $4, $5, $6)', atable)
          USING r.msg_id, r.read_ct, r.published_at, r.vt, r.message, r.headers;
        taken := taken || r.msg_id;
        taken_qe := taken_qe || r.qe_id;
    END LOOP;
    IF cardinality(taken_qe) > 0 THEN
        PERFORM mq.ack(qe, taken_qe);
        RETURN QUERY SELECT unnest(taken);
    END IF;
    -- delayed messages: disarm their timers, archive them as they were
    FOR r IN SELECT u.id FROM unnest(msg_ids) AS u(id) WHERE u.id <> ALL (taken) LOOP
        qe_id := pgmq._qe_id(qe, r.id);
        CONTINUE WHEN qe_id IS NULL;
        SELECT d.due INTO due FROM pgmq._delayed(qe) d WHERE d.msg_id = qe_id;
        CONTINUE WHEN NOT FOUND;
        IF pgmq._cancel(qe, qe_id) THEN
            EXECUTE format('INSERT INTO pgmq.%I (msg_id, read_ct, enqueued_at, vt, message, headers)
                            SELECT $1, 0, m.published_at, $2, pgmq._message(m.body, m.properties), m.headers
                              FROM mq.message($3) m', atable)
              USING r.id, due, qe_id;
            RETURN NEXT r.id;
        END IF;
    END LOOP;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.archive(queue_name TEXT, msg_id BIGINT)
RETURNS BOOLEAN AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM pgmq.archive(queue_name, ARRAY[msg_id]));
END;
$$ LANGUAGE plpgsql;

-- set_vt: the messages become visible at vt (or vt seconds from now),
-- whatever state they are in (ready, read by anyone, delayed); each id once,
-- in the order given
CREATE OR REPLACE FUNCTION pgmq.set_vt(queue_name TEXT, msg_ids BIGINT[], vt TIMESTAMP WITH TIME ZONE)
RETURNS SETOF pgmq.message_record AS $$
DECLARE
    qe TEXT := pgmq._queue(queue_name);
    id BIGINT;
    qe_id BIGINT;
    done BIGINT[] := ARRAY[]::bigint[];
    lease INTERVAL;
    l record;
    m record;
BEGIN
    IF msg_ids IS NULL OR vt IS NULL THEN
        RETURN;
    END IF;
    FOREACH id IN ARRAY msg_ids LOOP
        CONTINUE WHEN id IS NULL OR id = ANY (done);
        done := done || id;
        qe_id := pgmq._qe_id(qe, id);
        CONTINUE WHEN qe_id IS NULL;
        lease := vt - clock_timestamp();
        SELECT * INTO l FROM mq.lease_ids(qe, ARRAY[qe_id],
                                          CASE WHEN lease > interval '0' THEN lease
                                               ELSE interval '0' END);
        IF FOUND THEN
            RETURN QUERY SELECT id, l.delivery_count, x.published_at,
                                pgmq._last_read(l.delivery_count, x.published_at), vt,
                                pgmq._message(x.body, x.properties), x.headers
                           FROM mq.message(qe_id) x;
            CONTINUE;
        END IF;
        -- delayed: arm it again for the new time (a new queue_ext message
        -- with the same pgmq msg_id)
        SELECT * INTO m FROM mq.message(qe_id);
        IF NOT FOUND OR NOT pgmq._cancel(qe, qe_id) THEN
            CONTINUE;
        END IF;
        PERFORM mq.send(qe, m.body, headers => m.headers,
                        deliver_at => CASE WHEN vt > clock_timestamp() THEN vt END,
                        key => m.key, content_type => m.properties->>'content_type');
        RETURN QUERY SELECT id, 0, m.published_at, NULL::timestamptz, vt,
                            pgmq._message(m.body, m.properties), m.headers;
    END LOOP;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.set_vt(queue_name TEXT, msg_ids BIGINT[], vt INTEGER)
RETURNS SETOF pgmq.message_record AS $$
BEGIN
    RETURN QUERY SELECT * FROM pgmq.set_vt(queue_name, msg_ids, clock_timestamp() + make_interval(secs => vt));
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.set_vt(queue_name TEXT, msg_id BIGINT, vt TIMESTAMP WITH TIME ZONE)
RETURNS SETOF pgmq.message_record AS $$
BEGIN
    RETURN QUERY SELECT * FROM pgmq.set_vt(queue_name, ARRAY[msg_id], vt);
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.set_vt(queue_name TEXT, msg_id BIGINT, vt INTEGER)
RETURNS SETOF pgmq.message_record AS $$
BEGIN
    RETURN QUERY SELECT * FROM pgmq.set_vt(queue_name, ARRAY[msg_id], clock_timestamp() + make_interval(secs => vt));
END;
$$ LANGUAGE plpgsql;

-- purge: every message of the queue (ready, read, delayed); returns how many
CREATE OR REPLACE FUNCTION pgmq.purge_queue(queue_name TEXT)
RETURNS BIGINT AS $$
DECLARE
    qe TEXT := pgmq._queue(queue_name);
    n BIGINT := 0;
    ids BIGINT[];
    d record;
BEGIN
    n := mq.queue_purge(qe);
    -- read ones (queue_purge leaves them), up to 10000 at a time; those
    -- another transaction is settling are left to it
    LOOP
        SELECT array_agg(l.msg_id) INTO ids
          FROM mq.lease_ids(qe, ARRAY(SELECT f.msg_id FROM mq.in_flight(qe, 10000) f),
                            interval '5 minutes') l;
        EXIT WHEN ids IS NULL;
        n := n + mq.ack(qe, ids);
    END LOOP;
    FOR d IN SELECT * FROM pgmq._delayed(qe) LOOP
        IF pgmq._cancel(qe, d.msg_id) THEN
            n := n + 1;
        END IF;
    END LOOP;
    RETURN n;
END;
$$ LANGUAGE plpgsql;

------------------------------------------------------------
-- Metrics, listing
------------------------------------------------------------
CREATE OR REPLACE FUNCTION pgmq.metrics(queue_name TEXT)
RETURNS pgmq.metrics_result AS $$
DECLARE
    qtable TEXT := pgmq.format_table_name(queue_name, 'q');
    qe TEXT := 'pgmq.' || qtable;
    result_row pgmq.metrics_result;
BEGIN
    -- as pgmq's: who may read the queue's enqueued_at (pg_monitor may)
    IF to_regclass(format('pgmq.%I', qtable)) IS NOT NULL
       AND NOT has_column_privilege(format('pgmq.%I', qtable), 'enqueued_at', 'SELECT') THEN
        RAISE EXCEPTION 'permission denied for view %', qtable
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT metrics.queue_name, q.total, NULL, NULL, NULL, now(), q.ready,
           CASE WHEN m.is_partitioned THEN 0 END
      INTO result_row
      FROM mq._queue_stats(qe) q LEFT JOIN pgmq.meta m ON m.queue_name = metrics.queue_name
     WHERE q.queue = qe;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation "pgmq.%" does not exist', qtable
            USING ERRCODE = 'undefined_table';
    END IF;
    -- (pg_monitor reads them as the extension's owner)
    IF pg_has_role('pg_monitor', 'MEMBER') THEN
        SELECT EXTRACT(epoch FROM (now() - a.newest))::int,
               EXTRACT(epoch FROM (now() - a.oldest))::int
          INTO result_row.newest_msg_age_sec, result_row.oldest_msg_age_sec
          FROM pgmq._monitor_ages(qe) a;
    ELSE
        SELECT EXTRACT(epoch FROM (now() - a.newest))::int,
               EXTRACT(epoch FROM (now() - a.oldest))::int
          INTO result_row.newest_msg_age_sec, result_row.oldest_msg_age_sec
          FROM pgmq._queue_ages(qe) a;
    END IF;
    EXECUTE format('SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM pgmq.%I',
                   qtable || '_msg_id_seq')
       INTO result_row.total_messages;
    RETURN result_row;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.metrics_all()
RETURNS SETOF pgmq.metrics_result AS $$
DECLARE
    row_name RECORD;
BEGIN
    FOR row_name IN SELECT m.queue_name FROM pgmq.meta m LOOP
        RETURN NEXT pgmq.metrics(row_name.queue_name);
    END LOOP;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.list_queues()
RETURNS SETOF pgmq.queue_record AS $$
BEGIN
  RETURN QUERY SELECT * FROM pgmq.meta;
END
$$ LANGUAGE plpgsql;

------------------------------------------------------------
-- Creating and dropping queues
------------------------------------------------------------

-- Writes to the view pgmq.q_<name> (pgmq's is a table, and its users set
-- vt with an UPDATE to make messages visible again, or DELETE rows): an
-- UPDATE of vt is set_vt(msg_id, vt), a DELETE is delete(msg_id); other
-- columns cannot be changed.  Only the rows the view shows are reached
-- (at most 10000 ready messages, docs/pgmq.md).
CREATE OR REPLACE FUNCTION pgmq._q_write()
RETURNS trigger AS $$
DECLARE
    queue_name TEXT := substr(TG_TABLE_NAME, 3);
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF pgmq.delete(queue_name, OLD.msg_id) THEN
            RETURN OLD;
        END IF;
        RETURN NULL;
    END IF;
    IF (NEW.msg_id, NEW.read_ct, NEW.enqueued_at, NEW.last_read_at, NEW.message, NEW.headers)
       IS DISTINCT FROM
       (OLD.msg_id, OLD.read_ct, OLD.enqueued_at, OLD.last_read_at, OLD.message, OLD.headers) THEN
        RAISE EXCEPTION 'only vt can be updated in pgmq.%', TG_TABLE_NAME
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'pgmq.q_<queue> is a view of a queue_ext queue: use pgmq''s functions to change messages.';
    END IF;
    IF NEW.vt IS NULL THEN
        RAISE EXCEPTION 'null value in column "vt" of relation "%" violates not-null constraint', TG_TABLE_NAME
            USING ERRCODE = 'not_null_violation';
    END IF;
    IF NEW.vt IS DISTINCT FROM OLD.vt THEN
        PERFORM pgmq.set_vt(queue_name, OLD.msg_id, NEW.vt);
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

-- The queue_ext queue, its msg_id sequence and the view pgmq.q_<name>
-- (the parts every kind of pgmq queue has).  As in pgmq since 1.6, the
-- sequence (and the archive) are not members of the extension and stay
-- when it is dropped; the view is one, it is made of the extension's
-- functions (DROP EXTENSION ... CASCADE drops it).  durable: false for
-- create_unlogged.  With notices as pgmq's CREATE ... IF NOT EXISTS give
-- for a queue that exists.
CREATE OR REPLACE FUNCTION pgmq._create_queue(queue_name TEXT, durable BOOLEAN)
RETURNS void AS $$
DECLARE
    qtable TEXT := pgmq.format_table_name(queue_name, 'q');
    qe TEXT := 'pgmq.' || qtable;
    qseq TEXT := qtable || '_msg_id_seq';
    queue_existed BOOLEAN;
    left_rows BOOLEAN;
BEGIN
    queue_existed := EXISTS (SELECT 1 FROM mq._queue_stats(qe) q WHERE q.queue = qe);
    IF NOT queue_existed THEN
        PERFORM mq.queue_declare(qe, durable => durable);
    END IF;
    IF to_regclass(format('pgmq.%I', qseq)) IS NULL THEN
        EXECUTE format('CREATE SEQUENCE pgmq.%I', qseq);
    END IF;
    IF pgmq._left_table(qtable) THEN
        -- the table DROP EXTENSION left: a copy of what the view showed, whose
        -- messages stayed in the queue_ext queue; the view takes its place
        -- (pgmq's CREATE TABLE IF NOT EXISTS finds its kept table: its notice)
        IF NOT queue_existed THEN
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM pgmq.%I)', qtable) INTO left_rows;
            IF left_rows THEN
                RAISE EXCEPTION 'table "pgmq.%" left by DROP EXTENSION has messages, but queue_ext queue "%" no longer exists', qtable, qe
                    USING ERRCODE = 'object_not_in_prerequisite_state',
                          HINT = format('Move its rows elsewhere and drop it, or call pgmq.drop_queue(%L).', queue_name);
            END IF;
        END IF;
        EXECUTE format('DROP TABLE pgmq.%I', qtable);
        RAISE NOTICE 'relation "%" already exists, skipping', qtable;
    ELSIF to_regclass(format('pgmq.%I', qtable)) IS NOT NULL THEN
        IF (SELECT c.relkind FROM pg_class c
             WHERE c.oid = format('pgmq.%I', qtable)::regclass) <> 'v' THEN
            -- not a queue's view, not left by DROP EXTENSION: not ours
            RAISE EXCEPTION 'relation "pgmq.%" already exists and is not a queue of queue_ext_pgmq', qtable
                USING ERRCODE = 'duplicate_table',
                      DETAIL = 'A pgmq queue here is the view pgmq.' || qtable || ', or the table DROP EXTENSION queue_ext_pgmq left in its place.',
                      HINT = 'Rename or drop it first.';
        END IF;
        RAISE NOTICE 'relation "%" already exists, skipping', qtable;
    END IF;
    IF to_regclass(format('pgmq.%I', qtable)) IS NULL THEN
        EXECUTE format('CREATE VIEW pgmq.%I AS
                          SELECT msg_id, read_ct, enqueued_at, last_read_at, vt, message, headers
                            FROM pgmq._queue_rows(%L)', qtable, qe);
    END IF;
    IF pgmq._extension_exists('queue_ext_pgmq') AND NOT pgmq._belongs_to_pgmq(qtable) THEN
        EXECUTE format('ALTER EXTENSION queue_ext_pgmq ADD VIEW pgmq.%I', qtable);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_trigger t
                    WHERE t.tgrelid = format('pgmq.%I', qtable)::regclass
                      AND t.tgname = 'pgmq_q_write') THEN
        EXECUTE format('CREATE TRIGGER pgmq_q_write INSTEAD OF UPDATE OR DELETE ON pgmq.%I
                          FOR EACH ROW EXECUTE FUNCTION pgmq._q_write()', qtable);
    END IF;
    PERFORM pgmq._grant_monitor(qtable);
END;
$$ LANGUAGE plpgsql;

-- pgmq 1.13's grants to pg_monitor on a queue: enough for pgmq.metrics
-- (the columns vt and enqueued_at of pgmq.q_<name>, its msg_id sequence),
-- never a message
CREATE OR REPLACE FUNCTION pgmq._grant_monitor(qtable TEXT)
RETURNS void AS $$
BEGIN
    EXECUTE format('GRANT SELECT (vt, enqueued_at) ON pgmq.%I TO pg_monitor', qtable);
    EXECUTE format('GRANT SELECT ON SEQUENCE pgmq.%I TO pg_monitor', qtable || '_msg_id_seq');
END;
$$ LANGUAGE plpgsql;

-- The archive table pgmq.a_<name> (partition_col: NULL for a plain table)
CREATE OR REPLACE FUNCTION pgmq._create_archive(queue_name TEXT, partition_col TEXT)
RETURNS void AS $$
DECLARE
    atable TEXT := pgmq.format_table_name(queue_name, 'a');
BEGIN
    IF partition_col IS NULL THEN
        EXECUTE format('CREATE TABLE IF NOT EXISTS pgmq.%I (
            msg_id BIGINT PRIMARY KEY,
            read_ct INT DEFAULT 0 NOT NULL,
            enqueued_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
            last_read_at TIMESTAMP WITH TIME ZONE,
            archived_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
            vt TIMESTAMP WITH TIME ZONE NOT NULL,
            message JSONB,
            headers JSONB)', atable);
    ELSE
        EXECUTE format('CREATE TABLE IF NOT EXISTS pgmq.%I (
            msg_id BIGINT NOT NULL,
            read_ct INT DEFAULT 0 NOT NULL,
            enqueued_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
            last_read_at TIMESTAMP WITH TIME ZONE,
            archived_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
            vt TIMESTAMP WITH TIME ZONE NOT NULL,
            message JSONB,
            headers JSONB) PARTITION BY RANGE (%I)', atable, partition_col);
    END IF;
END;
$$ LANGUAGE plpgsql;

-- A plain or unlogged queue: the name checked, under the queue's lock
CREATE OR REPLACE FUNCTION pgmq._create(queue_name TEXT, unlogged BOOLEAN)
RETURNS void AS $$
DECLARE
    qtable TEXT;
    existed BOOLEAN;
BEGIN
    PERFORM pgmq.validate_queue_name(queue_name);
    PERFORM pgmq.acquire_queue_lock(queue_name);
    qtable := pgmq.format_table_name(queue_name, 'q');
    existed := to_regclass(format('pgmq.%I', qtable)) IS NOT NULL;
    PERFORM pgmq._create_queue(queue_name, NOT unlogged);
    PERFORM pgmq._create_archive(queue_name, NULL);
    IF existed THEN
        -- pgmq's index on vt (queue_ext needs none)
        RAISE NOTICE 'relation "%" already exists, skipping', qtable || '_vt_idx';
    END IF;
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON pgmq.%I (archived_at)',
                   'archived_at_idx_' || queue_name, pgmq.format_table_name(queue_name, 'a'));
    INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged)
    VALUES (queue_name, false, unlogged)
    ON CONFLICT DO NOTHING;
END;
$$ LANGUAGE plpgsql;

-- A durable queue_ext queue pgmq.q_<name>, the view pgmq.q_<name>, the
-- sequence of its msg_ids and the archive table pgmq.a_<name>
CREATE OR REPLACE FUNCTION pgmq.create_non_partitioned(queue_name TEXT)
RETURNS void AS $$
DECLARE
    -- (the name is checked on pgmq's line 7, for its error's CONTEXT)
    --
    --
BEGIN
    PERFORM pgmq.validate_queue_name(queue_name);
    PERFORM pgmq._create(queue_name, unlogged => false);
END;
$$ LANGUAGE plpgsql;

-- As create_non_partitioned, on a queue_ext queue that is not durable
-- (lost in a crash as an unlogged table); the archive is logged
CREATE OR REPLACE FUNCTION pgmq.create_unlogged(queue_name TEXT)
RETURNS void AS $$
    SELECT pgmq._create(queue_name, unlogged => true);
$$ LANGUAGE sql;

CREATE OR REPLACE FUNCTION pgmq."create"(queue_name TEXT)
RETURNS void AS $$
BEGIN
    PERFORM pgmq.create_non_partitioned(queue_name);
END;
$$ LANGUAGE plpgsql;

-- pg_partman
CREATE OR REPLACE FUNCTION pgmq._get_pg_partman_schema()
RETURNS TEXT LANGUAGE SQL AS $$
  SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_partman';
$$;

CREATE OR REPLACE FUNCTION pgmq._get_pg_partman_major_version()
RETURNS INT LANGUAGE SQL AS $$
  SELECT split_part(extversion, '.', 1)::INT FROM pg_extension WHERE extname = 'pg_partman'
$$;

CREATE OR REPLACE FUNCTION pgmq._ensure_pg_partman_installed()
RETURNS void AS $$
BEGIN
  IF NOT pgmq._extension_exists('pg_partman') THEN
    RAISE EXCEPTION 'pg_partman is required for partitioned queues';
  END IF;
END;
$$ LANGUAGE plpgsql;

-- A partition interval that is a number partitions by msg_id, anything
-- else by time
CREATE OR REPLACE FUNCTION pgmq._get_partition_col(partition_interval TEXT)
RETURNS TEXT AS $$
BEGIN
    RETURN CASE WHEN partition_interval ~ '^\s*[+-]?[0-9]+\s*$' THEN 'msg_id' ELSE 'enqueued_at' END;
END;
$$ LANGUAGE plpgsql IMMUTABLE;

-- Partition table fq_table by control through pg_partman, premake
-- partitions ahead, keeping retention of them (old partitions dropped by
-- partman's maintenance)
CREATE OR REPLACE FUNCTION pgmq._partman_parent(fq_table TEXT, control TEXT,
                                     partition_interval TEXT, retention_interval TEXT,
                                     premake INTEGER)
RETURNS void AS $$
BEGIN
    EXECUTE format('SELECT %I.create_parent(p_parent_table := %L, p_control := %L,
                                            p_interval := %L, p_type := %L, p_premake := %s)',
                   pgmq._get_pg_partman_schema(), fq_table, control, partition_interval,
                   CASE WHEN pgmq._get_pg_partman_major_version() = 5 THEN 'range' ELSE 'native' END,
                   coalesce(premake, 4));
    EXECUTE format('UPDATE %I.part_config
                       SET retention = %L, retention_keep_table = false,
                           retention_keep_index = true, automatic_maintenance = %L
                     WHERE parent_table = %L',
                   pgmq._get_pg_partman_schema(), retention_interval, 'on', fq_table);
END;
$$ LANGUAGE plpgsql;

-- A partitioned queue: the messages are in queue_ext as for any queue (its
-- logs need no partitions: settled generations are dropped whole); the
-- archive pgmq.a_<name> is partitioned by pg_partman, by msg_id or by
-- archived_at, with the retention given
CREATE OR REPLACE FUNCTION pgmq.create_partitioned(
  queue_name TEXT,
  partition_interval TEXT DEFAULT '10000',
  retention_interval TEXT DEFAULT '100000'
)
RETURNS void AS $$
DECLARE
    -- The queue as create's; the archive partitioned by
    -- pg_partman: by msg_id when partition_interval is a number, else by
    -- archived_at, partitions older than retention_interval dropped by
    -- partman's maintenance.
    --
    --
    --
BEGIN
    PERFORM pgmq.validate_queue_name(queue_name);
    PERFORM pgmq.acquire_queue_lock(queue_name);
    PERFORM pgmq._ensure_pg_partman_installed();
    PERFORM pgmq._create_partitioned(queue_name, partition_interval, retention_interval, 4);
END;
$$ LANGUAGE plpgsql;

-- pgmq 1.13's form, with premake (pg_partman's partitions made ahead, 4 by
-- default; no default here, so that the form above keeps taking the calls
-- with up to three arguments)
CREATE OR REPLACE FUNCTION pgmq.create_partitioned(
  queue_name TEXT,
  partition_interval TEXT,
  retention_interval TEXT,
  premake INTEGER
)
RETURNS void AS $$
BEGIN
    PERFORM pgmq.validate_queue_name(queue_name);
    PERFORM pgmq.acquire_queue_lock(queue_name);
    PERFORM pgmq._ensure_pg_partman_installed();
    IF premake < 1 THEN
        RAISE EXCEPTION 'premake must be at least 1, got %', premake;
    END IF;
    PERFORM pgmq._create_partitioned(queue_name, partition_interval, retention_interval, premake);
END;
$$ LANGUAGE plpgsql;

-- (the checks are made by both forms above, on pgmq's lines)
CREATE OR REPLACE FUNCTION pgmq._create_partitioned(
  queue_name TEXT,
  partition_interval TEXT,
  retention_interval TEXT,
  premake INTEGER
)
RETURNS void AS $$
DECLARE
    partition_col TEXT;
    atable TEXT := pgmq.format_table_name(queue_name, 'a');
BEGIN
    PERFORM pgmq.acquire_queue_lock(queue_name);
    PERFORM pgmq._ensure_pg_partman_installed();
    partition_col := pgmq._get_partition_col(partition_interval);
    PERFORM pgmq._create_queue(queue_name, true);
    INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged)
    VALUES (queue_name, true, false)
    ON CONFLICT DO NOTHING;
    partition_col := CASE WHEN partition_col = 'enqueued_at' THEN 'archived_at' ELSE partition_col END;
    PERFORM pgmq._create_archive(queue_name, partition_col);
    PERFORM pgmq._partman_parent('pgmq.' || atable, partition_col, partition_interval,
                                 retention_interval, premake);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON pgmq.%I (archived_at)',
                   'archived_at_idx_' || queue_name, atable);
END;
$$ LANGUAGE plpgsql;

-- Turn a plain archive into one partitioned by msg_id (the old table is
-- kept as pgmq.a_<name>_old)
CREATE OR REPLACE FUNCTION pgmq.convert_archive_partitioned(
  table_name TEXT,
  partition_interval TEXT DEFAULT '10000',
  retention_interval TEXT DEFAULT '100000',
  leading_partition INT DEFAULT 10
)
RETURNS void AS $$
DECLARE
    atable TEXT := pgmq.format_table_name(table_name, 'a');
    kind "char";
    col TEXT;
BEGIN
    SELECT c.relkind INTO kind FROM pg_class c
     WHERE c.relname = atable AND c.relnamespace = 'pgmq'::regnamespace;
    IF kind = 'p' THEN
        -- (pgmq's notice, with its stray "s")
        RAISE NOTICE 'Table %s is already partitioned', atable;
        RETURN;
    END IF;
    IF kind IS DISTINCT FROM 'r' THEN
        RAISE NOTICE 'Table %s does not exists', atable;
        RETURN;
    END IF;
    -- A number partitions by msg_id, anything else (an interval) by
    -- archived_at.  The old table keeps its rows under a new name; the new
    -- one has its columns and defaults, and by msg_id its constraints and
    -- indexes too (a primary key on msg_id cannot be kept when the
    -- partitions are by time).  The index on archived_at is renamed as the
    -- table is (pgmq's names: a long queue name truncates the new index
    -- name, and may collide with another queue's, as in pgmq).
    col := CASE WHEN pgmq._get_partition_col(partition_interval) = 'msg_id'
                THEN 'msg_id' ELSE 'archived_at' END;
    EXECUTE format('ALTER TABLE pgmq.%I RENAME TO %I', atable, atable || '_old');
    -- (the ALTER INDEX below is on pgmq's line 52, for its error's CONTEXT)
    IF col = 'msg_id' THEN
        EXECUTE format('CREATE TABLE pgmq.%I (LIKE pgmq.%I INCLUDING ALL) PARTITION BY RANGE (msg_id)',
                       atable, atable || '_old');
    ELSE
        EXECUTE format('CREATE TABLE pgmq.%I (LIKE pgmq.%I INCLUDING DEFAULTS INCLUDING GENERATED
                        INCLUDING STORAGE INCLUDING COMMENTS) PARTITION BY RANGE (archived_at)',
                       atable, atable || '_old');
    END IF;
    --
    --
    --
    --
    --
    --
    --
    --
    --
    --
    --
    --
    --
    --
    --
    EXECUTE 'ALTER INDEX pgmq.archived_at_idx_' || table_name
            || ' RENAME TO archived_at_idx_' || table_name || '_old';
    EXECUTE 'CREATE INDEX archived_at_idx_' || table_name || ' ON ' || format('pgmq.%I', atable)
            || '(archived_at)';
    EXECUTE format('SELECT %I.create_parent(p_parent_table := %L, p_control := %L,
                                            p_interval := %L, p_type := %L)',
                   pgmq._get_pg_partman_schema(), 'pgmq.' || atable, col, partition_interval,
                   CASE WHEN pgmq._get_pg_partman_major_version() = 5 THEN 'range' ELSE 'native' END);
    EXECUTE format('UPDATE %I.part_config
                       SET retention = %L, retention_keep_table = false,
                           retention_keep_index = false, infinite_time_partitions = true
                     WHERE parent_table = %L',
                   pgmq._get_pg_partman_schema(), retention_interval, 'pgmq.' || atable);
END;
$$ LANGUAGE plpgsql;

-- pgmq's deprecated no-op: archives are not members of the extension
CREATE OR REPLACE FUNCTION pgmq.detach_archive(queue_name TEXT)
RETURNS VOID AS $$
BEGIN
    -- an archive of a queue created by 0.1 may still be a member
    IF pgmq._extension_exists('queue_ext_pgmq')
       AND pgmq._belongs_to_pgmq(pgmq.format_table_name(queue_name, 'a')) THEN
        EXECUTE format('ALTER EXTENSION queue_ext_pgmq DROP TABLE pgmq.%I',
                       pgmq.format_table_name(queue_name, 'a'));
    END IF;
    RAISE WARNING 'detach_archive(queue_name) is deprecated and is a no-op. It will be removed in PGMQ v2.0. Archive tables are no longer member objects.';
END
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.drop_queue(queue_name TEXT)
RETURNS BOOLEAN AS $$
DECLARE
    qtable TEXT := pgmq.format_table_name(queue_name, 'q');
    qe TEXT := 'pgmq.' || qtable;
    qseq TEXT := qtable || '_msg_id_seq';
    atable TEXT := pgmq.format_table_name(queue_name, 'a');
    partitioned BOOLEAN;
    user_queue TEXT;
BEGIN
    PERFORM pgmq.acquire_queue_lock(queue_name);
    SELECT m.is_partitioned INTO partitioned FROM pgmq.meta m WHERE m.queue_name = drop_queue.queue_name;
    -- (a queue left by DROP EXTENSION has no view, but its sequence, a table)
    IF to_regclass(format('pgmq.%I', qtable)) IS NULL
       AND to_regclass(format('pgmq.%I', qseq)) IS NULL THEN
        RAISE NOTICE 'pgmq queue `%` does not exist', queue_name;
        RETURN FALSE;
    END IF;
    -- (queue_ext_pgmq's pgmq.set_max_reads: a dead-letter queue in use stays)
    SELECT m.queue_name INTO user_queue FROM pgmq.max_reads m
     WHERE lower(m.dead_letter_queue) = lower(drop_queue.queue_name) ORDER BY 1 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'queue "%" is the dead-letter queue of queue "%"', queue_name, user_queue
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = format('Call pgmq.set_max_reads(%L, NULL) first.', user_queue);
    END IF;
    IF pgmq._extension_exists('queue_ext_pgmq') THEN
        IF pgmq._belongs_to_pgmq(qtable) THEN
            EXECUTE format('ALTER EXTENSION queue_ext_pgmq DROP VIEW pgmq.%I', qtable);
        END IF;
        IF pgmq._belongs_to_pgmq(qseq) THEN
            EXECUTE format('ALTER EXTENSION queue_ext_pgmq DROP SEQUENCE pgmq.%I', qseq);
        END IF;
        IF pgmq._belongs_to_pgmq(atable) THEN
            EXECUTE format('ALTER EXTENSION queue_ext_pgmq DROP TABLE pgmq.%I', atable);
        END IF;
    END IF;
    IF pgmq._left_table(qtable) THEN
        -- left by DROP EXTENSION (a table of that name that was not is
        -- refused by DROP VIEW: 42809)
        EXECUTE format('DROP TABLE pgmq.%I', qtable);
    ELSE
        EXECUTE format('DROP VIEW IF EXISTS pgmq.%I', qtable);
    END IF;
    EXECUTE format('DROP SEQUENCE IF EXISTS pgmq.%I', qseq);
    EXECUTE format('DROP TABLE IF EXISTS pgmq.%I', atable);
    IF EXISTS (SELECT 1 FROM mq._queue_stats(qe) q WHERE q.queue = qe) THEN
        PERFORM mq.queue_delete(qe);
    END IF;
    DELETE FROM pgmq.meta m WHERE m.queue_name = drop_queue.queue_name;
    IF partitioned AND pgmq._extension_exists('pg_partman') THEN
        EXECUTE format('DELETE FROM %I.part_config WHERE parent_table IN (%L, %L)',
                       pgmq._get_pg_partman_schema(), 'pgmq.' || qtable, 'pgmq.' || atable);
    END IF;
    RETURN TRUE;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.drop_queue(queue_name TEXT, partitioned BOOLEAN)
RETURNS BOOLEAN AS $$
BEGIN
    RAISE WARNING 'drop_queue(queue_name, partitioned) is deprecated and will be removed in PGMQ v2.0. Use drop_queue(queue_name) instead';
    PERFORM pgmq.drop_queue(queue_name);
    RETURN TRUE;
END;
$$ LANGUAGE plpgsql;

------------------------------------------------------------
-- Notifications of sends (pgmq's enable_notify_insert): a send to a queue
-- that has them notifies channel 'pgmq.q_<name>.INSERT', at most once per
-- throttle_interval_ms (pgmq's trigger on its table; here the send itself
-- does it, pgmq._notify_insert)
------------------------------------------------------------
CREATE OR REPLACE FUNCTION pgmq.enable_notify_insert(queue_name TEXT, throttle_interval_ms INTEGER DEFAULT 250)
RETURNS void AS $$
DECLARE
    qtable TEXT := pgmq.format_table_name(queue_name, 'q');
    v_queue_name TEXT := queue_name;
    v_interval INTEGER := throttle_interval_ms;
BEGIN
    IF v_interval < 0 THEN
        RAISE EXCEPTION 'throttle_interval_ms must be non-negative';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM information_schema.tables t
                    WHERE t.table_schema = 'pgmq' AND t.table_name = qtable) THEN
        RAISE EXCEPTION 'Queue "%" does not exist. Create it first using pgmq.create()', v_queue_name;
    END IF;
    PERFORM pgmq.disable_notify_insert(v_queue_name);
    INSERT INTO pgmq.notify_insert_throttle (queue_name, throttle_interval_ms)
    VALUES (v_queue_name, v_interval)
    ON CONFLICT ON CONSTRAINT notify_insert_throttle_queue_name_key DO UPDATE
       SET throttle_interval_ms = EXCLUDED.throttle_interval_ms,
           last_notified_at = to_timestamp(0);
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.disable_notify_insert(queue_name TEXT)
RETURNS void AS $$
DECLARE
    v_queue_name TEXT := queue_name;
BEGIN
    -- pgmq drops its trigger here: the same statement on the view gives
    -- pgmq's notices when there is none (and its error for no queue)
    IF NOT EXISTS (SELECT 1 FROM pgmq.notify_insert_throttle t WHERE t.queue_name = v_queue_name) THEN
        EXECUTE format('DROP TRIGGER IF EXISTS trigger_notify_queue_insert_listeners ON pgmq.%I',
                       pgmq.format_table_name(v_queue_name, 'q'));
    END IF;
    DELETE FROM pgmq.notify_insert_throttle t WHERE t.queue_name = v_queue_name;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.list_notify_insert_throttles()
RETURNS TABLE (queue_name TEXT, throttle_interval_ms INTEGER,
               last_notified_at TIMESTAMP WITH TIME ZONE)
LANGUAGE sql STABLE AS $$
    SELECT t.queue_name, t.throttle_interval_ms, t.last_notified_at
      FROM pgmq.notify_insert_throttle t
     ORDER BY t.queue_name;
$$;

CREATE OR REPLACE FUNCTION pgmq.update_notify_insert(queue_name TEXT, throttle_interval_ms INTEGER)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF throttle_interval_ms < 0 THEN
        RAISE EXCEPTION 'throttle_interval_ms must be non-negative, got: %', throttle_interval_ms;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pgmq.meta m WHERE m.queue_name = update_notify_insert.queue_name) THEN
        RAISE EXCEPTION 'Queue "%" does not exist. Create the queue first using pgmq.create()', queue_name;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pgmq.notify_insert_throttle t
                    WHERE t.queue_name = update_notify_insert.queue_name) THEN
        RAISE EXCEPTION 'Queue "%" does not have notify_insert enabled. Enable it first using pgmq.enable_notify_insert()', queue_name;
    END IF;
    UPDATE pgmq.notify_insert_throttle t
       SET throttle_interval_ms = update_notify_insert.throttle_interval_ms,
           last_notified_at = to_timestamp(0)
     WHERE t.queue_name = update_notify_insert.queue_name;
END;
$$;

------------------------------------------------------------
-- Notifications of messages made readable again (queue_ext_pgmq's, not
-- pgmq's; docs/pgmq.md, "Extensions"): when a delayed message falls due or
-- a vt runs out, queue_ext's worker notifies pgmq's channel of the queue,
-- 'pgmq.q_<name>.INSERT', at its commit (mq.queue_notify), so that code
-- LISTENing for sends wakes up for these too instead of polling.  No
-- throttle: at most one notification per queue per worker transaction.
------------------------------------------------------------
-- the queue's channel set (on) or cleared, for enable_ and disable_notify_visible
CREATE OR REPLACE FUNCTION pgmq._notify_visible(queue_name TEXT, "on" BOOLEAN)
RETURNS void AS $$
DECLARE
    qtable TEXT := pgmq.format_table_name(queue_name, 'q');
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pgmq.meta m
                    WHERE lower(m.queue_name) = lower(_notify_visible.queue_name)) THEN
        RAISE EXCEPTION 'queue "%" does not exist', _notify_visible.queue_name
            USING ERRCODE = 'undefined_object';
    END IF;
    PERFORM mq.queue_notify('pgmq.' || qtable,
                            CASE WHEN "on" THEN 'pgmq.' || qtable || '.INSERT' END);
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.enable_notify_visible(queue_name TEXT)
RETURNS void AS $$
BEGIN
    PERFORM pgmq._notify_visible(queue_name, true);
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.disable_notify_visible(queue_name TEXT)
RETURNS void AS $$
BEGIN
    PERFORM pgmq._notify_visible(queue_name, false);
END;
$$ LANGUAGE plpgsql;

-- The queues that have it, of those the caller sees in mq.queues
CREATE OR REPLACE FUNCTION pgmq.list_notify_visible()
RETURNS TABLE (queue_name VARCHAR, channel TEXT)
LANGUAGE SQL STABLE AS $$
    SELECT m.queue_name, c.channel
      FROM pgmq.meta m
      JOIN mq.queues q ON q.queue = pgmq._queue(m.queue_name),
           LATERAL mq.queue_notify_channel(q.queue) AS c(channel)
     WHERE c.channel IS NOT NULL
     ORDER BY m.queue_name;
$$;
