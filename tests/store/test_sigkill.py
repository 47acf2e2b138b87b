"""A real process recording into the store is SIGKILLed mid-capture."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np

from mcuprof.protocol import Metadata, ProfileData, decode_stream
from mcuprof.store import INTERRUPTED, RECORDING, SessionStore

CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data
    from mcuprof.store import SessionStore

    store = SessionStore(sys.argv[1])
    meta = Metadata(168_000_000, 1_000_000, 0xCAFE, "killed")
    writer = store.create("doomed", None, meta)
    writer.append(encode_metadata(meta))
    for p in range(1_000_000):
        rec = np.zeros(50, dtype=RECORD_DTYPE)
        rec["func_addr"] = 0x08000100
        rec["entry_time"] = np.arange(p * 50, p * 50 + 50) * 10
        rec["duration"] = 5
        writer.append(encode_profile_data(rec))
        print(writer.id, p + 1, flush=True)
    """
)


def test_sigkill_during_capture_leaves_a_readable_session(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        sid, packets = 0, 0
        while packets < 40:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "child exited"
            sid, packets = map(int, line.split())
        # While the child lives, another opener must leave its session alone.
        with SessionStore(tmp_path, autoflush=False) as peer:
            assert peer.get(sid).status == RECORDING
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL

    with SessionStore(tmp_path, autoflush=False) as store:
        info = store.get(sid)
        assert info.status == INTERRUPTED
        assert info.metadata == Metadata(168_000_000, 1_000_000, 0xCAFE, "killed")
        data = store.raw(sid)
        assert info.raw_bytes == len(data) > store.raw_path(sid).stat().st_size  # compressed
        events, stats = decode_stream(data)
        assert stats.crc_errors == 0 and stats.malformed == 0
        recs = np.concatenate([e.records for e in events if isinstance(e, ProfileData)])
        # Everything the child reported as appended is there, in order, intact.
        assert len(recs) >= packets * 50
        assert np.array_equal(recs["entry_time"], np.arange(len(recs)) * 10)
        assert np.all(recs["duration"] == 5)
        assert info.stopped_at is not None
