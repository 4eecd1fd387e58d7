-- The tables of @waiting/pgmq-js itself (not pgmq's): its queue.create and
-- queue.drop also keep a row in pgmq.tb_queue_meta, and its router keeps
-- routes (exchanges of queues) in pgmq.tb_route.  Its npm package does not
-- carry their DDL; these are written from the columns its code reads and
-- writes (dist/lib/queue-meta-manager/db.types.d.ts, router/db.types.d.ts),
-- for test/t/058_pgmq_client2.pl, and are the same against pgmq itself.
CREATE TABLE pgmq.tb_queue_meta (
    queue_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue_name varchar(512) NOT NULL UNIQUE,
    queue_key varchar(512),
    json jsonb,
    ctime timestamptz NOT NULL DEFAULT now(),
    mtime timestamptz
);

CREATE TABLE pgmq.tb_route (
    route_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    route_name varchar(512) NOT NULL UNIQUE,
    queue_ids bigint[] NOT NULL,
    json jsonb,
    ctime timestamptz NOT NULL DEFAULT now(),
    mtime timestamptz
);
