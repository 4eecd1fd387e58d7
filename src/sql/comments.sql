------------------------------------------------------------------------
-- One-line help for the public API (issue 37): a COMMENT on every function
-- of schema mq whose name does not start with '_' and on every such view,
-- saying what it does and where docs/ tells more, so that \df+ mq.* and
-- \dv+ mq.* answer.  Run after every other function file, by the install
-- script and by the update from 0.1 alike (Makefile, MQ_SQL_FUNCS).
--
-- Comments are keyed by name, not by signature: every overload of a name
-- (publish of bytea, text and jsonb, ...) gets the same one, and a change of
-- arguments needs no change here.  A name listed here that schema mq does
-- not have fails the install, so that a renamed or dropped function cannot
-- lose its comment silently; a new public function without a comment fails
-- regression test api_comments.  Anchors are those of docs/api.md's
-- headings.
------------------------------------------------------------------------
DO $comments$
DECLARE
	c			record;
	p			record;
	n			int;
BEGIN
	FOR c IN
		SELECT t.kind, t.name, t.help
		  FROM (VALUES
	-- topology
	('f', 'exchange_declare', 'Declare an exchange (direct, topic, fanout or headers); idempotent; see docs/api.md#topology'),
	('f', 'exchange_delete', 'Delete an exchange and its bindings; see docs/api.md#topology'),
	('f', 'queue_declare', 'Declare a queue (classic, quorum or stream) with its arguments and return its name; idempotent; see docs/api.md#topology'),
	('f', 'queue_delete', 'Delete a queue and return how many messages it held; see docs/api.md#topology'),
	('f', 'queue_purge', 'Remove the ready messages of a queue and return how many; see docs/api.md#topology'),
	('f', 'queue_notify', 'Set the channel NOTIFYed when a delayed message or an expired lease makes a message of a queue ready (NULL: none); see docs/api.md#topology'),
	('f', 'queue_notify_channel', 'The channel set by mq.queue_notify for a queue (NULL: none); see docs/api.md#topology'),
	('f', 'bind', 'Bind a queue to an exchange with a binding key (headers exchanges: arguments); see docs/api.md#topology'),
	('f', 'unbind', 'Remove a binding of a queue to an exchange; see docs/api.md#topology'),
	('f', 'grant', 'Grant configure, publish or consume on a queue or exchange to a role (NULL: PUBLIC); see docs/api.md#topology'),
	('f', 'revoke', 'Revoke a privilege given by mq.grant; see docs/api.md#topology'),
	-- publish
	('f', 'publish', 'Publish one message to an exchange and return its id; see docs/api.md#publish'),
	('f', 'send', 'Send one message to a queue through the default exchange and return its id; see docs/api.md#publish'),
	('f', 'publish_batch', 'Publish many messages to an exchange in one call, returning their ids; see docs/api.md#publish'),
	('f', 'send_batch', 'Send many messages to a queue in one call, returning their ids; see docs/api.md#publish'),
	-- consume and settle
	('f', 'consume', 'Take messages from a queue (on a stream, for a consumer group), leased until settled; see docs/api.md#consume-and-settle'),
	('f', 'ack', 'Acknowledge delivered messages, by id or receipt, and return how many; see docs/api.md#consume-and-settle'),
	('f', 'nack', 'Return delivered messages to the queue (after an optional delay) or dead-letter them, by id or receipt; see docs/api.md#consume-and-settle'),
	('f', 'reject', 'Return one delivered message to the queue or dead-letter it, by id or receipt; see docs/api.md#consume-and-settle'),
	('f', 'extend_lease', 'Extend the lease of delivered messages, by id or receipt; see docs/api.md#consume-and-settle'),
	('f', 'consumer_declare', 'Declare a named consumer of a queue and its prefetch limit (as basic.qos); see docs/api.md#consume-and-settle'),
	('f', 'consumer_delete', 'Delete a consumer declared by mq.consumer_declare; see docs/api.md#consume-and-settle'),
	('f', 'lease_ids', 'Lease messages of a queue by id to this session, whoever holds them (a visibility timeout); see docs/api.md#leases-by-id'),
	('f', 'in_flight', 'List the messages of a queue leased now, with their lease ends; see docs/api.md#leases-by-id'),
	('f', 'ack_keys', 'Acknowledge the newest message of each business key in a queue, whoever holds it; see docs/api.md#leases-by-id'),
	-- streams and consumer groups
	('f', 'read', 'Read committed messages of one stream partition from an offset or a time, without a consumer group; see docs/api.md#streams'),
	('f', 'group_declare', 'Declare a consumer group of a stream (clustering or broadcast, start, filter, order, retries); see docs/api.md#consumer-groups'),
	('f', 'group_delete', 'Delete a consumer group of a stream and its progress; see docs/api.md#consumer-groups'),
	('f', 'redrive', 'Move the dead letters of a queue back to where they came from, or to target_queue; see docs/api.md#mqredrive'),
	('f', 'seek', 'Reset a consumer group''s position in a stream to an offset or a time; see docs/api.md#mqseek'),
	-- delayed and transactional messages
	('f', 'cancel', 'Cancel a delayed message that is not yet due; see docs/api.md#delayed-and-transactional-messages'),
	('f', 'producer_group_declare', 'Declare a producer group of half (transactional) messages and its check function; see docs/api.md#delayed-and-transactional-messages'),
	('f', 'publish_half', 'Publish a half (transactional) message, delivered once committed by mq.end_half or the check function; see docs/api.md#delayed-and-transactional-messages'),
	('f', 'end_half', 'Commit or roll back a half (transactional) message; see docs/api.md#delayed-and-transactional-messages'),
	-- backup and restore
	('f', 'export', 'Snapshot the broker (topology, messages, positions) into the mq.export_* tables for pg_dump; see docs/api.md#backup-and-restore'),
	('f', 'import', 'Restore the broker saved by mq.export() in a restored database; see docs/api.md#backup-and-restore'),
	-- filters, RabbitMQ definitions
	('f', 'filter_match', 'Evaluate a consumer group''s tag or SQL92 filter for one message; see docs/api.md#filters'),
	('f', 'definitions_import', 'Declare what a RabbitMQ definitions export holds, returning one row per object and decision; see docs/api.md#rabbitmq-definitions'),
	('f', 'definitions_export', 'Export this database''s topology in RabbitMQ''s definitions format; see docs/api.md#rabbitmq-definitions'),
	-- inspection
	('f', 'browse', 'Show what mq.consume would deliver next from a queue, without taking it; see docs/api.md#inspection'),
	('f', 'message', 'Show one message by id; see docs/api.md#inspection'),
	('f', 'message_position', 'Show the stream, partition and offset a stream message was given; see docs/api.md#inspection'),
	('f', 'message_offset', 'Return the offset a message was given in its one stream (NULL when none or several); see docs/api.md#inspection'),
	('f', 'messages_by_key', 'Show the messages published with a business key, newest first; see docs/api.md#inspection'),
	('f', 'trace', 'Show the life of a message as events (published, routed, delivered, acked, dead-lettered, ...); see docs/api.md#inspection'),
	('f', 'log_retire', 'Drop message log segments nothing refers to (the worker does it too); see docs/api.md#inspection'),
	('f', 'topic_matches', 'Test whether a topic binding key matches a routing key; see docs/api.md#inspection'),
	('f', 'topic_route', 'Return the 1-based positions of the topic binding keys that match a routing key; see docs/api.md#inspection'),
	('f', 'headers_match', 'Test whether a headers exchange binding''s arguments match a message''s headers; see docs/api.md#inspection'),
	('f', 'mqlog_verify', 'Check the pages and rows of an mqlog table, one row per problem; see docs/api.md#inspection'),
	('f', 'mqlog_page_items', 'Decode the rows of one page of an mqlog table; see docs/api.md#inspection'),
	('f', 'mqlog_handler', 'Handler of the mqlog table access method, the append-only message log (not called directly); see docs/mqlog.md'),
	('v', 'queues', 'Every queue the role may see, with its type, counts (ready, unacked, delayed), consumers and arguments; see docs/api.md#inspection'),
	('v', 'exchanges', 'Every exchange, with its type, settings and owner; see docs/api.md#inspection'),
	('v', 'bindings', 'The bindings of the queues the role may see, the default exchange''s included; see docs/api.md#inspection'),
	('v', 'stream_partitions', 'One row per partition of each stream: offsets, bytes, first and last publish times; see docs/api.md#inspection'),
	('v', 'consumer_groups', 'The consumer groups of streams per partition: committed offset, lag, in flight, dead letters; see docs/api.md#inspection'),
	('v', 'group_options', 'The consumer groups of the streams the role may see, with the options they were declared with; see docs/api.md#inspection'),
	('v', 'half_messages', 'Half (transactional) messages and their state; see docs/api.md#inspection'),
	('v', 'segments', 'The segments of the message log; see docs/api.md#inspection'),
	('v', 'metrics', 'Prometheus samples (name, labels, value) of every queue and consumer group the role may see; see docs/api.md#inspection and docs/metrics.md'),
	('v', 'replication', 'The synchronous standbys and whether quorum commits can be confirmed now; see docs/api.md#inspection')
		  ) AS t(kind, name, help)
	LOOP
		n := 0;
		IF c.kind = 'f' THEN
			FOR p IN
				SELECT f.oid FROM pg_catalog.pg_proc f
				 WHERE f.pronamespace = 'mq'::pg_catalog.regnamespace AND f.proname = c.name
				 ORDER BY f.oid
			LOOP
				EXECUTE pg_catalog.format('COMMENT ON FUNCTION mq.%I(%s) IS %L', c.name,
										  pg_catalog.pg_get_function_identity_arguments(p.oid), c.help);
				n := n + 1;
			END LOOP;
		ELSIF EXISTS (SELECT FROM pg_catalog.pg_class r
					   WHERE r.relnamespace = 'mq'::pg_catalog.regnamespace
						 AND r.relname = c.name AND r.relkind = 'v') THEN
			EXECUTE pg_catalog.format('COMMENT ON VIEW mq.%I IS %L', c.name, c.help);
			n := 1;
		END IF;
		IF n = 0 THEN
			RAISE EXCEPTION 'src/sql/comments.sql comments % mq.%, which does not exist',
				CASE c.kind WHEN 'f' THEN 'function' ELSE 'view' END, c.name
				USING ERRCODE = 'undefined_object',
					  HINT = 'Rename or remove its line in src/sql/comments.sql.';
		END IF;
	END LOOP;
END
$comments$;
