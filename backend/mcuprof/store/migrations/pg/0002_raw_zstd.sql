-- Raw chunks stored zstd-compressed (store/zst.py): each new row is one whole zstd frame
-- of at most PG_CHUNK_BYTES as received. Rows written before stay as they are (zstd
-- false); ``size`` is a row's length as received, whichever it holds.
ALTER TABLE raw_chunks ADD COLUMN size INTEGER, ADD COLUMN zstd BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE raw_chunks SET size = length(data);
ALTER TABLE raw_chunks ALTER COLUMN size SET NOT NULL;
