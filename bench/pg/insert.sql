-- SPDX-License-Identifier: MIT
-- pgbench: the statement behind POST /api/webhooks (src/store/pg_sql.c "ins"),
-- one autocommit transaction per insert. Run with -M prepared.
\set us 1795986000000000 + random(0, 86400000000)
INSERT INTO webhooks(source, event_type, payload, received_at)
VALUES ('github', 'push', '{"ref":"refs/heads/main","commits":3}',
        (timestamptz 'epoch' + :us * interval '1 microsecond'))
RETURNING id;
