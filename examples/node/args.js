// args.js: the few command-line options the examples share, and the
// connection: the libpq environment variables (PGHOST, PGPORT, PGDATABASE,
// PGUSER, PGPASSWORD; a PGHOST starting with / is a socket directory), or
// --dsn postgresql://user@host:port/db (a URI: node-postgres does not read
// libpq's key=value strings; for a socket, postgresql:///db?host=/dir&port=N).
'use strict';

const { Client } = require('pg');

// parse(defaults): --name value pairs into a copy of defaults; numbers stay numbers
function parse(defaults, usage) {
  const opts = { ...defaults };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)$/.exec(argv[i]);
    const key = m && m[1].replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!m || !(key in defaults) || i + 1 >= argv.length) {
      console.error(`usage: ${usage}`);
      process.exit(2);
    }
    const v = argv[++i];
    opts[key] = typeof defaults[key] === 'number' ? Number(v) : v;
    if (typeof defaults[key] === 'number' && !Number.isFinite(opts[key])) {
      console.error(`--${m[1]}: not a number: ${v}`);
      process.exit(2);
    }
  }
  return opts;
}

async function connect(dsn) {
  const client = new Client(dsn ? { connectionString: dsn } : {});
  await client.connect();
  return client;
}

module.exports = { parse, connect };
