"""The hang probe for ``node --test`` (see :mod:`runners.hang` for pytest and the rules).

``NODE_OPTIONS=--require $ARCS_PRIVATE/hang/arcs_hang_probe.js`` (the run's private folder, outside
the repository's tree) loads a preload into every test file's process (the runner marks them with
``NODE_TEST_CONTEXT``; the runner process itself and other node processes are left alone). It registers root ``beforeEach``/``afterEach`` hooks that arm and disarm
a timer in a worker thread with ``limit = max(probe_s, ratio x the time the file ran before this
test)``. When a test outlives it, the worker sends the process SIGUSR1 (node then starts its
inspector, even while the main thread spins), pauses the main thread through the inspector's
WebSocket, prints the paused stack after an ``ARCS hang probe:`` line on stderr, and kills the
process. ``node --test`` reports that file as failed; :func:`node_hang` reads the line and the
stack back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from runners.results import Frame, is_third_party

PRELOAD = "arcs_hang_probe.js"
WORKER = "arcs_hang_worker.js"

PRELOAD_SOURCE = """'use strict';
// ARCS hang probe for `node --test` (preloaded through NODE_OPTIONS by ARCS; see runners/hang_node.py).
try {
  const probe = Number(process.env.ARCS_HANG_PROBE_S);
  const ratio = Number(process.env.ARCS_HANG_RATIO) || 3;
  const wt = require('node:worker_threads');
  // Only in a test file's process (the runner sets NODE_TEST_CONTEXT), not in the runner itself.
  if (wt.isMainThread && probe > 0 && process.env.NODE_TEST_CONTEXT && !process.execArgv.includes('--test')) {
    // The inspector starts only when a test hangs (SIGUSR1 from the worker), on a port of its own.
    process.debugPort = 20000 + Math.floor(Math.random() * 40000);
    const worker = new wt.Worker(require('node:path').join(__dirname, 'arcs_hang_worker.js'), {
      workerData: { port: process.debugPort },
    });
    worker.unref();
    const t0 = performance.now();
    const test = require('node:test');
    test.beforeEach((t) => {
      const before = (performance.now() - t0) / 1000;
      worker.postMessage({ arm: Math.max(probe, ratio * before), name: t.name, before });
    });
    test.afterEach(() => worker.postMessage({ arm: 0 }));
  }
} catch (err) {
  // A node without these APIs runs its tests unprobed.
}
"""

WORKER_SOURCE = """'use strict';
// ARCS hang probe, its worker thread (see runners/hang_node.py): while a test runs longer than its limit, it pauses the main
// thread through the inspector's WebSocket (dispatched even while the main thread spins), prints
// its stack on stderr and kills the process.
const { workerData, parentPort } = require('node:worker_threads');
const net = require('node:net');
const crypto = require('node:crypto');
const fs = require('node:fs');
let timer = null;

function send(sock, payload) {
  const data = Buffer.from(JSON.stringify(payload));
  const mask = crypto.randomBytes(4);
  let head;
  if (data.length < 126) head = Buffer.from([0x81, 0x80 | data.length]);
  else { head = Buffer.alloc(4); head[0] = 0x81; head[1] = 0x80 | 126; head.writeUInt16BE(data.length, 2); }
  for (let i = 0; i < data.length; i++) data[i] ^= mask[i % 4];
  sock.write(Buffer.concat([head, mask, data]));
}

function stop(test) {
  process.kill(process.pid, 'SIGUSR1');
  const http = require('node:http');
  const ask = (tries) => http.get({ host: '127.0.0.1', port: workerData.port, path: '/json/list' }, (res) => {
    let body = '';
    res.on('data', (d) => { body += d; });
    res.on('end', () => { try { pause(test, JSON.parse(body)[0].webSocketDebuggerUrl); } catch { retry(tries); } });
  }).on('error', () => retry(tries));
  const retry = (tries) => { if (tries > 0) setTimeout(() => ask(tries - 1), 100); };
  ask(50);
}

function pause(test, url) {
  const u = new URL(url);
  const sock = net.connect(Number(u.port), u.hostname);
  const scripts = new Map();
  let buf = Buffer.alloc(0);
  let open = false;
  sock.on('connect', () => sock.write(`GET ${u.pathname} HTTP/1.1\\r\\nHost: ${u.host}\\r\\nUpgrade: websocket\\r\\n` +
    `Connection: Upgrade\\r\\nSec-WebSocket-Key: ${crypto.randomBytes(16).toString('base64')}\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\n`));
  sock.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    if (!open) {
      const end = buf.indexOf('\\r\\n\\r\\n');
      if (end < 0) return;
      buf = buf.subarray(end + 4);
      open = true;
      send(sock, { id: 1, method: 'Debugger.enable' });
      send(sock, { id: 2, method: 'Debugger.pause' });
    }
    while (buf.length >= 2) {
      let len = buf[1] & 0x7f; let off = 2;
      if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
      else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
      if (buf.length < off + len) return;
      let msg = null;
      try { msg = JSON.parse(buf.subarray(off, off + len).toString('utf8')); } catch { msg = null; }
      buf = buf.subarray(off + len);
      if (!msg) continue;
      if (msg.method === 'Debugger.scriptParsed') scripts.set(msg.params.scriptId, msg.params.url);
      if (msg.method !== 'Debugger.paused') continue;
      const lines = msg.params.callFrames.map((f) => {
        const file = (scripts.get(f.location.scriptId) || f.url || '').replace(/^file:\\/\\//, '');
        return `    at ${f.functionName || '<anonymous>'} (${file}:${f.location.lineNumber + 1}:${f.location.columnNumber + 1})`;
      });
      fs.writeSync(2, `ARCS hang probe: test ${JSON.stringify(test.name)} ran longer than ${test.arm.toFixed(1)}s ` +
        `(the file had been running ${test.before.toFixed(1)}s when it started); stopped as a hang\\n${lines.join('\\n')}\\n`);
      process.kill(process.pid, 'SIGKILL');
    }
  });
  sock.on('error', () => {});
}

parentPort.on('message', (m) => {
  if (timer) clearTimeout(timer);
  timer = m.arm > 0 ? setTimeout(() => stop(m), m.arm * 1000) : null;
});
"""

_MARK = re.compile(
    r'ARCS hang probe: test (?P<name>"(?:[^"\\]|\\.)*") ran longer than (?P<limit>[\d.]+)s '
    r"\(the file had been running (?P<before>[\d.]+)s when it started\)"
)
_AT = re.compile(r"^[#\s]*at (?P<func>\S+) \((?P<file>.+):(?P<line>\d+):\d+\)\s*$")


@dataclass(frozen=True, slots=True)
class NodeHang:
    """What the node probe printed when it stopped a test file."""

    test_name: str
    limit_s: float
    before_s: float
    frames: tuple[Frame, ...] = ()
    """Repository frames of the paused main thread, outermost first."""


def node_hang(output: str) -> NodeHang | None:
    """The first hang the node probe reported in ``output`` (stdout and stderr), or None."""
    import json

    m = _MARK.search(output)
    if m is None:
        return None
    try:
        name = str(json.loads(m["name"]))
    except ValueError:
        name = m["name"].strip('"')
    frames: list[Frame] = []
    for line in output[m.end() :].splitlines()[1:]:
        at = _AT.match(line)
        if at is None:
            break
        file = at["file"]
        if file.startswith("node:") or not file or is_third_party(file):
            continue
        frames.append(Frame(file, int(at["line"]), None if at["func"] == "<anonymous>" else at["func"]))
    return NodeHang(name, float(m["limit"]), float(m["before"]), tuple(reversed(frames)))


__all__ = ["PRELOAD", "PRELOAD_SOURCE", "WORKER", "WORKER_SOURCE", "NodeHang", "node_hang"]
