-- BEGIN RabbitMQ definitions (issue 15)
------------------------------------------------------------------------
-- RabbitMQ definitions: mq.definitions_import(json) declares what a
-- RabbitMQ definitions export (rabbitmqctl export_definitions, the
-- management API's GET /api/definitions) describes, as far as queue_ext
-- has it, and returns one row per object and decision, so that nothing is
-- dropped silently; mq.definitions_export() writes this database's
-- topology in that format.  docs/api.md, "RabbitMQ definitions".
------------------------------------------------------------------------

-- RabbitMQ's x-max-age ("7D", "12h", "1Y") as a retention ("7 days"),
-- with RabbitMQ's units: a year is 365 days, a month 30.  The one mapping:
-- mq.queue_declare (mq._stream_args_check), mq.definitions_import and the
-- gateway (which passes x-max-age on) use it.
CREATE OR REPLACE FUNCTION mq._rabbit_age(age text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	m text[] := regexp_match(age, '^([0-9]+)([YMDhms])$');
BEGIN
	IF m IS NULL OR m[1]::numeric = 0 THEN
		RAISE EXCEPTION 'invalid x-max-age "%"', age
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'RabbitMQ''s form: a positive number and one of Y, M, D, h, m, s, such as "7D".';
	END IF;
	RETURN CASE m[2] WHEN 'Y' THEN m[1]::numeric * 365 || ' days'
		WHEN 'M' THEN m[1]::numeric * 30 || ' days' WHEN 'D' THEN m[1]::numeric || ' days'
		WHEN 'h' THEN m[1]::numeric || ' hours' WHEN 'm' THEN m[1]::numeric || ' minutes'
		ELSE m[1]::numeric || ' seconds' END;
END
$$;

-- A stream's retention as RabbitMQ's x-max-age, in the largest unit that
-- divides it (months count as 30 days, as for every queue_ext interval)
CREATE OR REPLACE FUNCTION mq._rabbit_max_age(retention text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
	SELECT CASE WHEN s % 86400 = 0 THEN s / 86400 || 'D' WHEN s % 3600 = 0 THEN s / 3600 || 'h'
				WHEN s % 60 = 0 THEN s / 60 || 'm' ELSE s || 's' END
	  FROM (SELECT extract(epoch FROM retention::interval)::bigint AS s) x
$$;

CREATE OR REPLACE FUNCTION mq.definitions_import(definitions jsonb, vhost text DEFAULT '/')
RETURNS TABLE (kind text, name text, action text, detail text)
LANGUAGE plpgsql AS $$
DECLARE
	o jsonb;
	p jsonb;
	args jsonb;
	pol jsonb;
	qtype text;
	xtype text;
	notes text[];
	k text;
	v jsonb;
	existed boolean;
	role_name text;
	-- queue arguments queue_ext has, by queue type
	classic_args CONSTANT text[] := ARRAY['x-message-ttl', 'x-max-length', 'x-max-length-bytes',
		'x-overflow', 'x-dead-letter-exchange', 'x-dead-letter-routing-key', 'x-delivery-limit',
		'x-max-priority'];
	-- policy keys that are queue arguments
	policy_args CONSTANT jsonb := '{"message-ttl": "x-message-ttl", "max-length": "x-max-length",
		"max-length-bytes": "x-max-length-bytes", "overflow": "x-overflow",
		"dead-letter-exchange": "x-dead-letter-exchange",
		"dead-letter-routing-key": "x-dead-letter-routing-key", "delivery-limit": "x-delivery-limit",
		"max-age": "x-max-age"}';
BEGIN
	IF definitions IS NULL OR jsonb_typeof(definitions) <> 'object' THEN
		RAISE EXCEPTION 'RabbitMQ definitions must be a JSON object'
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'Pass the file rabbitmqctl export_definitions writes.';
	END IF;
	IF vhost IS NULL THEN
		RAISE EXCEPTION 'vhost must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	FOR k IN SELECT jsonb_object_keys(definitions) LOOP
		IF k NOT IN ('rabbit_version', 'rabbitmq_version', 'product_name', 'product_version',
					 'vhosts', 'users', 'permissions', 'topic_permissions', 'parameters',
					 'global_parameters', 'policies', 'queues', 'exchanges', 'bindings') THEN
			RETURN QUERY SELECT 'definitions', k, 'skipped', 'unknown section';
		END IF;
	END LOOP;
	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'vhosts', '[]')) LOOP
		IF o->>'name' IS DISTINCT FROM vhost THEN
			RETURN QUERY SELECT 'vhost', o->>'name', 'skipped',
				format('only vhost %s is imported (import another into another database, vhost => %L)',
					   vhost, o->>'name');
		END IF;
	END LOOP;

	-- exchanges first: queues and bindings name them
	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'exchanges', '[]')) LOOP
		IF coalesce(o->>'vhost', '/') <> vhost THEN
			RETURN QUERY SELECT 'exchange', o->>'name', 'skipped', format('vhost %s', o->>'vhost');
			CONTINUE;
		END IF;
		notes := '{}';
		xtype := o->>'type';
		args := coalesce(o->'arguments', '{}');
		IF xtype = 'x-delayed-message' AND args ? 'x-delayed-type' THEN
			notes := notes || format('declared as %s: delays are per publish here (delay =>)',
									 args->>'x-delayed-type');
			xtype := args->>'x-delayed-type';
			args := args - 'x-delayed-type';
		END IF;
		IF coalesce((o->>'internal')::boolean, false) THEN
			notes := notes || 'internal is not supported: clients may publish to it'::text;
		END IF;
		IF coalesce((o->>'auto_delete')::boolean, false) THEN
			notes := notes || 'auto_delete is not supported: it stays until deleted'::text;
		END IF;
		IF xtype NOT IN ('direct', 'fanout', 'topic', 'headers') THEN
			RETURN QUERY SELECT 'exchange', o->>'name', 'skipped',
				format('exchange type %s is not supported', xtype);
			CONTINUE;
		END IF;
		existed := EXISTS (SELECT 1 FROM mq.cat_exchange e WHERE e.name = o->>'name');
		BEGIN
			PERFORM mq.exchange_declare(o->>'name', xtype,
				coalesce((o->>'durable')::boolean, true), arguments => args);
			RETURN QUERY SELECT 'exchange', o->>'name',
				CASE WHEN existed THEN 'exists' ELSE 'created' END,
				array_to_string(notes, '; ');
		EXCEPTION WHEN OTHERS THEN
			RETURN QUERY SELECT 'exchange', o->>'name', 'failed', SQLERRM;
		END;
	END LOOP;

	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'queues', '[]')) LOOP
		IF coalesce(o->>'vhost', '/') <> vhost THEN
			RETURN QUERY SELECT 'queue', o->>'name', 'skipped', format('vhost %s', o->>'vhost');
			CONTINUE;
		END IF;
		notes := '{}';
		args := coalesce(o->'arguments', '{}');
		qtype := coalesce(o->>'type', args->>'x-queue-type', 'classic');
		args := args - 'x-queue-type';
		IF qtype NOT IN ('classic', 'quorum', 'stream') THEN
			RETURN QUERY SELECT 'queue', o->>'name', 'skipped',
				format('queue type %s is not supported', qtype);
			CONTINUE;
		END IF;
		-- the policy that applies (highest priority), for what it sets of
		-- the queue's arguments; a queue's own argument wins
		SELECT x INTO pol FROM jsonb_array_elements(coalesce(definitions->'policies', '[]')) x
		 WHERE coalesce(x->>'vhost', '/') = vhost AND (o->>'name') ~ (x->>'pattern')
		   AND coalesce(x->>'apply-to', 'all') IN ('all', 'queues',
				CASE WHEN qtype = 'classic' THEN 'classic_queues' WHEN qtype = 'quorum' THEN 'quorum_queues'
					 ELSE 'streams' END)
		 ORDER BY coalesce((x->>'priority')::int, 0) DESC LIMIT 1;
		IF pol IS NOT NULL THEN
			FOR k, v IN SELECT * FROM jsonb_each(pol->'definition') LOOP
				IF policy_args ? k THEN
					IF NOT args ? (policy_args->>k) THEN
						args := args || jsonb_build_object(policy_args->>k, v);
					END IF;
				ELSE
					notes := notes || format('policy %s: %s not applied', pol->>'name', k);
				END IF;
			END LOOP;
			notes := notes || format('policy %s applied', pol->>'name');
		END IF;
		existed := EXISTS (SELECT 1 FROM mq.cat_queue c WHERE c.name = o->>'name');
		BEGIN
			IF qtype = 'stream' THEN
				-- a stream's arguments in queue_ext's words
				p := '{}';
				FOR k, v IN SELECT * FROM jsonb_each(args) LOOP
					IF k IN ('x-max-age', 'x-max-length-bytes') THEN
						-- mq.queue_declare takes RabbitMQ's names (its errors
						-- then quote what the file says)
						p := p || jsonb_build_object(k, v);
					ELSE
						notes := notes || format('argument %s is not supported: dropped', k);
					END IF;
				END LOOP;
				args := p;
			ELSE
				FOR k IN SELECT jsonb_object_keys(args) LOOP
					IF NOT k = ANY (classic_args) OR (qtype = 'quorum' AND k = 'x-max-priority') THEN
						notes := notes || format('argument %s is not supported: dropped', k);
						args := args - k;
					END IF;
				END LOOP;
			END IF;
			IF coalesce((o->>'auto_delete')::boolean, false) THEN
				notes := notes || 'auto_delete is not supported: it stays until deleted'::text;
			END IF;
			PERFORM mq.queue_declare(o->>'name', qtype, coalesce((o->>'durable')::boolean, true), args);
			-- mq.queue_declare's warning (src/quorum.c), in the row too
			IF qtype = 'quorum' AND current_setting('synchronous_standby_names') = ''
			   AND (current_setting('mq.quorum_unavailable') = 'error'
					OR current_setting('mq.quorum_requires_standby')::boolean) THEN
				notes := notes || ('no synchronous standby is configured: publishes and acks will fail '
					'(53000) until one is; on a server without replicas: ALTER SYSTEM SET '
					'mq.quorum_unavailable = ''wait''; SELECT pg_reload_conf();')::text;
			END IF;
			RETURN QUERY SELECT 'queue', o->>'name',
				CASE WHEN existed THEN 'exists' ELSE 'created' END,
				array_to_string(notes, '; ');
		EXCEPTION WHEN OTHERS THEN
			RETURN QUERY SELECT 'queue', o->>'name', 'failed', SQLERRM;
		END;
	END LOOP;

	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'bindings', '[]')) LOOP
		k := format('%s -> %s (%s)', o->>'source', o->>'destination', o->>'routing_key');
		IF coalesce(o->>'vhost', '/') <> vhost THEN
			RETURN QUERY SELECT 'binding', k, 'skipped', format('vhost %s', o->>'vhost');
		ELSIF o->>'destination_type' = 'exchange' THEN
			RETURN QUERY SELECT 'binding', k, 'skipped', 'exchange-to-exchange bindings are not supported';
		ELSIF coalesce(o->>'source', '') = '' THEN
			RETURN QUERY SELECT 'binding', k, 'exists', 'the default exchange binds every queue';
		ELSE
			existed := EXISTS (SELECT 1 FROM mq.bindings b WHERE b.exchange = o->>'source'
								 AND b.queue = o->>'destination' AND b.binding_key = o->>'routing_key'
								 AND b.arguments = coalesce(o->'arguments', '{}'));
			BEGIN
				PERFORM mq.bind(o->>'destination', o->>'source', coalesce(o->>'routing_key', ''),
								coalesce(o->'arguments', '{}'));
				RETURN QUERY SELECT 'binding', k, CASE WHEN existed THEN 'exists' ELSE 'created' END, '';
			EXCEPTION WHEN OTHERS THEN
				RETURN QUERY SELECT 'binding', k, 'failed', SQLERRM;
			END;
		END IF;
	END LOOP;

	-- users become roles (without their passwords: RabbitMQ's hashes are
	-- not PostgreSQL's), permissions become grants on what exists now
	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'users', '[]')) LOOP
		role_name := o->>'name';
		IF role_name = 'guest' THEN
			RETURN QUERY SELECT 'user', role_name, 'skipped', 'RabbitMQ''s default user';
			CONTINUE;
		END IF;
		IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = role_name) THEN
			RETURN QUERY SELECT 'user', role_name, 'exists', 'an existing role';
			CONTINUE;
		END IF;
		BEGIN
			EXECUTE format('CREATE ROLE %I LOGIN', role_name);
			RETURN QUERY SELECT 'user', role_name, 'created',
				concat_ws('; ', 'a login role without password: set one with ALTER ROLE ... PASSWORD',
						  CASE WHEN jsonb_array_length(coalesce(o->'tags', '[]')) > 0
							   THEN format('tags %s not applied', o->'tags') END);
		EXCEPTION WHEN OTHERS THEN
			RETURN QUERY SELECT 'user', role_name, 'failed', SQLERRM;
		END;
	END LOOP;
	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'permissions', '[]')) LOOP
		role_name := o->>'user';
		IF coalesce(o->>'vhost', '/') <> vhost THEN
			RETURN QUERY SELECT 'permission', role_name, 'skipped', format('vhost %s', o->>'vhost');
			CONTINUE;
		ELSIF NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = role_name) THEN
			RETURN QUERY SELECT 'permission', role_name, 'skipped', 'no such role';
			CONTINUE;
		END IF;
		-- configure: queues and exchanges; write: publish to exchanges and
		-- queues; read: consume from queues (an empty or missing
		-- pattern grants nothing, as in RabbitMQ: nullif makes the match NULL)
		FOR k, xtype, qtype IN
			SELECT 'configure', 'queue', c.name FROM mq.cat_queue c WHERE c.name ~ nullif(o->>'configure', '')
			UNION ALL SELECT 'configure', 'exchange', e.name FROM mq.cat_exchange e
			 WHERE e.name ~ nullif(o->>'configure', '') AND e.name <> '' AND e.name NOT LIKE 'amq.%'
			UNION ALL SELECT 'publish', 'exchange', e.name FROM mq.cat_exchange e
			 WHERE e.name ~ nullif(o->>'write', '') AND e.name <> ''
			UNION ALL SELECT 'publish', 'queue', c.name FROM mq.cat_queue c WHERE c.name ~ nullif(o->>'write', '')
			UNION ALL SELECT 'consume', 'queue', c.name FROM mq.cat_queue c WHERE c.name ~ nullif(o->>'read', '')
		LOOP
			BEGIN
				PERFORM mq.grant(k, xtype, qtype, role_name::regrole);
				RETURN QUERY SELECT 'permission', role_name, 'granted', format('%s on %s %s', k, xtype, qtype);
			EXCEPTION WHEN OTHERS THEN
				RETURN QUERY SELECT 'permission', role_name, 'failed',
					format('%s on %s %s: %s', k, xtype, qtype, SQLERRM);
			END;
		END LOOP;
	END LOOP;

	FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->'policies', '[]')) LOOP
		RETURN QUERY SELECT 'policy', o->>'name',
			CASE WHEN coalesce(o->>'vhost', '/') = vhost THEN 'applied' ELSE 'skipped' END,
			CASE WHEN coalesce(o->>'vhost', '/') = vhost
				 THEN 'its queue arguments were given to the queues it matched at import; later queues do not get them'
				 ELSE format('vhost %s', o->>'vhost') END;
	END LOOP;
	FOR k IN SELECT unnest(ARRAY['topic_permissions', 'parameters', 'global_parameters']) LOOP
		FOR o IN SELECT * FROM jsonb_array_elements(coalesce(definitions->k, '[]')) LOOP
			IF k = 'global_parameters' AND o->>'name' IN ('cluster_name', 'internal_cluster_id') THEN
				CONTINUE;
			END IF;
			RETURN QUERY SELECT rtrim(k, 's'), coalesce(o->>'name', o->>'user'), 'skipped',
				format('%s are not supported', replace(k, '_', ' '));
		END LOOP;
	END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION mq.definitions_export()
RETURNS jsonb LANGUAGE sql STABLE AS $$
	SELECT jsonb_build_object(
		'product_name', 'queue_ext',
		'product_version', (SELECT extversion FROM pg_extension WHERE extname = 'queue_ext'),
		'vhosts', jsonb_build_array(jsonb_build_object('name', '/')),
		'users', '[]'::jsonb, 'permissions', '[]'::jsonb, 'topic_permissions', '[]'::jsonb,
		'parameters', '[]'::jsonb, 'global_parameters', '[]'::jsonb, 'policies', '[]'::jsonb,
		'queues', coalesce((SELECT jsonb_agg(jsonb_build_object(
				'name', c.name, 'vhost', '/', 'durable', c.durable, 'auto_delete', false,
				'type', c.type,
				'arguments', CASE WHEN c.type = 'stream' THEN
					jsonb_strip_nulls(jsonb_build_object('x-queue-type', 'stream',
						'x-max-age', mq._rabbit_max_age(c.arguments->>'retention'),
						'x-max-length-bytes', c.arguments->'max_bytes'))
					ELSE c.arguments || jsonb_build_object('x-queue-type', c.type) END)
				ORDER BY c.name)
			FROM mq.cat_queue c WHERE c.name NOT LIKE '\%DLQ\%%'), '[]'::jsonb),
		'exchanges', coalesce((SELECT jsonb_agg(jsonb_build_object(
				'name', e.name, 'vhost', '/', 'type', e.type, 'durable', e.durable,
				'auto_delete', false, 'internal', false,
				'arguments', e.arguments || CASE WHEN e.alternate_exchange IS NOT NULL
					THEN jsonb_build_object('alternate-exchange', e.alternate_exchange)
					ELSE '{}'::jsonb END)
				ORDER BY e.name)
			FROM mq.cat_exchange e WHERE e.name <> '' AND e.name NOT LIKE 'amq.%'), '[]'::jsonb),
		'bindings', coalesce((SELECT jsonb_agg(jsonb_build_object(
				'source', b.exchange, 'vhost', '/', 'destination', b.queue,
				'destination_type', 'queue', 'routing_key', b.binding_key, 'arguments', b.arguments)
				ORDER BY b.exchange, b.queue, b.binding_key)
			FROM mq.bindings b WHERE b.exchange <> ''), '[]'::jsonb))
$$;
-- END RabbitMQ definitions
