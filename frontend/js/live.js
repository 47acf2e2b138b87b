// The one WebSocket: live updates in, "frame drawn" reports out (for latency figures).

export function connectLive(ctx, handlers) {
  let socket = null;
  let retry = 500;
  let lostNoticeShown = false;

  function open() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws`);
    socket.addEventListener("open", () => {
      retry = 500;
      if (lostNoticeShown) { ctx.clearNotice(); lostNoticeShown = false; }
    });
    socket.addEventListener("message", (ev) => {
      let msg;
      try { msg = JSON.parse(ev.data); } catch { return; }
      handlers.onMessage(msg);
    });
    socket.addEventListener("close", () => {
      if (!lostNoticeShown && retry >= 2000) {
        ctx.notify("Lost the connection to the mcuprof server; retrying…", "warning");
        lostNoticeShown = true;
      }
      setTimeout(open, retry);
      retry = Math.min(retry * 2, 5000);
    });
  }
  open();

  return {
    report(data) {
      if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(data));
    },
  };
}
