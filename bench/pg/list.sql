-- SPDX-License-Identifier: MIT
-- pgbench: the statement behind GET /api/webhooks (src/store/pg_sql.c "list0",
-- default limit 100, no keyset bound). Run with -M prepared.
SELECT id, source, event_type, payload, (extract(epoch FROM received_at) * 1000000)::int8
FROM webhooks WHERE id < 9223372036854775807 ORDER BY id DESC LIMIT 100;
