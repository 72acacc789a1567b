// The explorer's page script: keeps the block list and the head line live, and draws the loss chart with
// uPlot. Everything from the server is inserted as text (textContent), never as markup.
"use strict";
(function () {
  function cell(row, text, cls) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text;
    row.appendChild(td);
    return td;
  }

  function blockRow(b) {
    const tr = document.createElement("tr");
    tr.setAttribute("data-height", String(b.height));
    const a = document.createElement("a");
    a.href = "/block/" + encodeURIComponent(String(b.height));
    a.textContent = String(b.height);
    cell(tr, "").appendChild(a);
    cell(tr, b.time_text);
    cell(tr, String(b.txs));
    const code = document.createElement("code");
    code.title = b.app_hash;
    code.textContent = b.app_hash_short;
    cell(tr, "").appendChild(code);
    if (b.committers === null) cell(tr, "pending", "muted");
    else cell(tr, String(b.committers.length));
    return tr;
  }

  function live() {
    const table = document.getElementById("live-blocks");
    if (!table) return;
    const body = table.tBodies[0];
    function newest() {
      const first = body.rows[0];
      return first ? Number(first.getAttribute("data-height")) : 0;
    }
    function poll() {
      fetch("/api/blocks?after=" + newest()).then(function (r) {
        return r.json();
      }).then(function (answer) {
        const blocks = answer.blocks.slice().sort(function (x, y) {
          return x.height - y.height;
        });
        blocks.forEach(function (b) {
          const old = body.querySelector('tr[data-height="' + b.height + '"]');
          const row = blockRow(b);
          if (old) old.replaceWith(row);
          else body.insertBefore(row, body.firstChild);
        });
        while (body.rows.length > 50) body.deleteRow(body.rows.length - 1);
        if (answer.head) {
          const h = document.getElementById("head-height");
          if (h) h.textContent = String(answer.head.height);
          const c = document.getElementById("card-height");
          if (c) c.textContent = String(answer.head.height);
          const hash = document.getElementById("head-hash");
          if (hash) {
            hash.textContent = answer.head.app_hash.slice(0, 12) + "\u2026";
            hash.title = answer.head.app_hash;
          }
        }
      }).catch(function () {}).then(function () {
        setTimeout(poll, 2000);
      });
    }
    setTimeout(poll, 2000);
  }

  function chart() {
    const el = document.getElementById("loss-chart");
    const data = document.getElementById("loss-data");
    if (!el || !data || typeof uPlot === "undefined") return;
    const points = JSON.parse(data.textContent);
    const opts = {
      title: "Loss of each settled step",
      width: Math.max(320, Math.min(900, el.clientWidth || 900)),
      height: 300,
      scales: { x: { time: false } },
      axes: [{ label: "step (training round)" }, { label: "loss (nats)" }],
      series: [
        { label: "step" },
        { label: "loss", stroke: "#2c6fbb", width: 2, points: { show: true, size: 8, fill: "#2c6fbb" } },
      ],
    };
    globalThis.lossChart = new uPlot(opts, [points.steps, points.losses], el);
  }

  live();
  chart();
})();
