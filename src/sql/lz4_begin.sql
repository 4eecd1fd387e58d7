-- BEGIN lz4 for this script's catalog values (bench/README.md "Stream publish
-- at 1 msg/txn: the profile").  Every call of a function with DEFAULT
-- arguments reads them from pg_proc.proargdefaults twice (parser and
-- planner); mq.send's fifteen are stored compressed, and pglz decompression
-- was 6% of a single-message publish's instructions.  Where the server has
-- lz4, what this script stores compressed uses it (decompressing about
-- five times faster); the setting is put back at the end of the script.
SELECT pg_catalog.set_config('queue_ext.saved_toast_compression',
		pg_catalog.current_setting('default_toast_compression'), true),
	pg_catalog.set_config('default_toast_compression', 'lz4', true)
FROM pg_catalog.pg_settings
WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals);
-- END lz4 (the setting is restored at the end of the script)
