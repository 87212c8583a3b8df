-- hookd's INSERT (src/store/pg_sql.c, statement "ins") for pgbench: the database
-- side of a POST /api/webhooks. Keep in step with pg.c: same table, columns,
-- timestamp conversion and RETURNING. Autocommit, one row per transaction,
-- as hookd sends it.
\set us 1795986000000000 + random(0, 86400000000)
INSERT INTO webhooks(source, event_type, payload, received_at)
VALUES ('github', 'push', '{"ref":"refs/heads/main","commits":3}',
        (timestamptz 'epoch' + :us * interval '1 microsecond'))
RETURNING id;
