-- The team store's schema: sessions, their tags and summaries, ELFs by SHA-256, and the
-- raw capture in chunks. Applied once, in a transaction, by store/pgmigrate.py.
CREATE TABLE elfs (
    sha256   TEXT PRIMARY KEY,
    size     BIGINT NOT NULL,
    added_at DOUBLE PRECISION NOT NULL,
    data     BYTEA NOT NULL
);

CREATE SEQUENCE session_ids;

CREATE TABLE sessions (
    id          BIGINT PRIMARY KEY DEFAULT nextval('session_ids'),
    name        TEXT NOT NULL,
    notes       TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL CHECK (status IN ('recording', 'complete', 'interrupted')),
    source      TEXT NOT NULL DEFAULT 'live',
    created_at  DOUBLE PRECISION NOT NULL,
    started_at  DOUBLE PRECISION,
    stopped_at  DOUBLE PRECISION,
    raw_bytes   BIGINT NOT NULL DEFAULT 0,
    elf_sha256  TEXT REFERENCES elfs(sha256),
    elf_name    TEXT,
    metadata    TEXT,
    link_stats  TEXT,
    duration_us DOUBLE PRECISION,
    kind        TEXT NOT NULL DEFAULT 'miniprofiler',
    loss        TEXT,
    -- Set in the upload's last transaction: until then no reader lists or opens the row,
    -- and a later open deletes it once its writer's advisory lock is free.
    visible     BOOLEAN NOT NULL DEFAULT FALSE
);
ALTER SEQUENCE session_ids OWNED BY sessions.id;
CREATE INDEX sessions_elf ON sessions(elf_sha256);
CREATE INDEX sessions_hidden ON sessions(id) WHERE NOT visible;

CREATE TABLE session_tags (
    session_id BIGINT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (session_id, key)
);
CREATE INDEX session_tags_kv ON session_tags(key, value);

CREATE TABLE session_summaries (
    session_id BIGINT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,
    summary    TEXT NOT NULL
);

-- The device-to-host stream exactly as received, in pieces of at most PG_CHUNK_BYTES.
CREATE TABLE raw_chunks (
    session_id BIGINT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    idx        INTEGER NOT NULL,
    data       BYTEA NOT NULL,
    PRIMARY KEY (session_id, idx)
);
-- Chunks are already-dense capture bytes: no point in TOAST compressing them again.
ALTER TABLE raw_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
