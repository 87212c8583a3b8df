-- hookd's paged list (src/store/pg_sql.c, statement "list0") for pgbench: the
-- database side of GET /api/webhooks with the default limit (100) and no
-- keyset bound. Keep in step with pg.c.
SELECT id, source, event_type, payload, (extract(epoch FROM received_at) * 1000000)::int8
FROM webhooks WHERE id < 9223372036854775807 ORDER BY id DESC LIMIT 100;
