-- BEGIN lz4 restored (see the start of the script)
SELECT pg_catalog.set_config('default_toast_compression',
		pg_catalog.current_setting('queue_ext.saved_toast_compression'), true)
WHERE pg_catalog.current_setting('queue_ext.saved_toast_compression', true) <> '';
-- END lz4 restored
