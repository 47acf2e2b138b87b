"""A QView 7.4.1 customization script, run under Xvfb by tests/qs/test_qview_real.py.

Usage: python qview_script.py HOST:UDP_PORT   (environment: QVIEW_OUT, QVIEW_NMIN)

Once QView has the target's info (its answer to the INFO that QView sends on attach),
the script sets filters, makes Table_inst current, peeks, pokes, queries, publishes
and posts SERVE_SIG and sends a user command, through QView's own API, as a user's
script would. Every packet QView hands it, and every text line QView shows, is written
to QVIEW_OUT, one line each, for the test to read; then QView quits.
"""

from __future__ import annotations

import os

import qview
from qview import QSpy, QView

# QView 7.4.1's glb_filter() and loc_filter() name the group constants (GRP_ON, IDS_ALL,
# ...) as module globals, which qview.py never defines: NameError for any group. The
# workaround: define them in the module, from the class where they do live.
for _name in dir(QView):
    if _name.startswith(("GRP_", "IDS_")):
        setattr(qview, _name, getattr(QView, _name))

# QView waits 50 polls (about 0.5 s) for the attach confirmation, then opens a modal
# "Attach to QSpy" dialog that nobody can press under Xvfb. On a loaded machine, wait
# longer (about 20 s) instead.
_attach = QSpy._attach


def _patient_attach() -> None:
    _attach()
    QSpy._attach_ctr = 2000


QSpy._attach = staticmethod(_patient_attach)

OUT = open(os.environ["QVIEW_OUT"], "a", buffering=1)  # noqa: SIM115 (open for the run)
NMIN = int(os.environ["QVIEW_NMIN"])  # offset of Table_inst's queue low-water mark
LAST_COMMAND = 7  # the user command sent last: its Trg-Ack ends the script


def log(*words: object) -> None:
    OUT.write(" ".join(str(w) for w in words) + "\n")


class Script(QView):
    def on_init(self) -> None:
        QView._echo_text.set(1)  # QView's "Echo" box: attach to the text channel too
        show = QView.print_text

        def print_text(text: bytes) -> None:
            log("TEXT", bytes(text).decode("utf-8", "replace"))
            show(text)

        QView.print_text = staticmethod(print_text)
        QView._gui.after(50, self._when_info)

    def _when_info(self) -> None:
        if not QView._have_info:
            QView._gui.after(50, self._when_info)
            return
        log("INFO", QSpy._fmt_target, "objPtr", QSpy._size_objPtr, "sig", QSpy._size_sig)
        QView.glb_filter(QView.GRP_ON)
        QView.loc_filter(QView.IDS_ALL)
        QView.current_obj(QView.OBJ_AP, "Table_inst")
        QView.peek(0, 1, 16)
        # 1, below the queue's free count: the target's own update of its low-water mark
        # (nMin = min(nMin, nFree) on every post) keeps it. 0x1234 came back as 5 once.
        QView.poke(NMIN, 2, 1)
        QView.peek(NMIN, 2, 1)
        QView.current_obj(QView.OBJ_SM, "Table_inst")
        QView.query_curr(QView.OBJ_SM)
        QView.current_obj(QView.OBJ_AO, "Table_inst")
        QView.publish("SERVE_SIG")
        QView.post("SERVE_SIG")
        QView.glb_filter(QView.GRP_ON, -QView.GRP_QF)  # QF records (publish) silenced
        QView.publish("SERVE_SIG")
        QView.glb_filter(QView.GRP_ON)
        QView.command(LAST_COMMAND, 1, 2, 3)

    # Packets from the target, as QView hands them to a script (methods named after the
    # records, as QView looks them up): seq, record id, data.
    def QS_RX_STATUS(self, packet: bytes) -> None:
        log("QS_RX_STATUS", packet[2:].hex())
        if packet[2] == 1:  # QS_RX_COMMAND acknowledged: everything was answered
            QView._gui.after(200, QView._quit)

    def QS_TARGET_DONE(self, packet: bytes) -> None:
        log("QS_TARGET_DONE", packet[2:].hex())

    def QS_PEEK_DATA(self, packet: bytes) -> None:
        log("QS_PEEK_DATA", packet[2:].hex())

    def QS_QUERY_DATA(self, packet: bytes) -> None:
        log("QS_QUERY_DATA", packet[2:].hex())

    def QS_QF_PUBLISH(self, packet: bytes) -> None:
        log("QS_QF_PUBLISH", packet[2:].hex())


if __name__ == "__main__":
    QView.main(Script())
