// llmfix HTML report: the item list and the item view (see llmfix/reporters/html.py).
// Model text is only ever put in the page with textContent, never as markup.
"use strict";
(function () {
  var ROW = 30; // px per row of the list
  var EXTRA = 10; // rows rendered above and below the view
  var FLAG = { failed: 1, baselined: 2, gate: 4, textCut: 8, valueCut: 16, diagCut: 32, calls: 64 };
  var ERROR_KIND = 1, CHANGE_KIND = 2;
  var I = { id: 0, status: 1, risk: 2, group: 3, flags: 4, tool: 5, text: 6, value: 7,
    diags: 8, patch: 9, failures: 10, calls: 11, attempts: 12 };
  var D = { code: 0, sev: 1, start: 2, end: 3, message: 4, pointer: 5, risk: 6, hint: 7, rule: 8 };

  var meta = JSON.parse(document.getElementById("llmfix-meta").textContent);
  var items = JSON.parse(document.getElementById("llmfix-items").textContent);
  var view = []; // indices of the items shown, in order
  var opened = -1;

  function $(id) { return document.getElementById(id); }
  // Bidi controls (U+202E...) in model text would reorder what is shown around them: they
  // are shown as escapes, as the overview shows them (llmfix.reporters.sinks.for_html).
  var BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function visible(text) {
    return text.replace(BIDI, function (c) {
      return "\\u" + ("000" + c.charCodeAt(0).toString(16)).slice(-4);
    });
  }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = visible(String(text));
    return node;
  }
  function option(select, value, label) {
    var node = el("option", null, label);
    node.value = value;
    select.appendChild(node);
  }
  function statusName(item) { return item[I.status] < 0 ? "?" : meta.statuses[item[I.status]]; }
  function riskName(index) { return index < 0 ? "" : meta.risks[index]; }

  // ------------------------------------------------------------------ filters

  function fillFilters() {
    var counts = {};
    items.forEach(function (it) { counts[it[I.status]] = (counts[it[I.status]] || 0) + 1; });
    meta.statuses.forEach(function (s, i) {
      if (counts[i]) option($("f-status"), String(i), meta.labels[i] + " (" + counts[i] + ")");
    });
    meta.risks.forEach(function (r, i) { option($("f-risk"), String(i), r); });
    option($("f-risk"), "-1", "no change");
    var byName = meta.codes.map(function (c, i) { return [c, i]; }).sort();
    byName.forEach(function (pair) {
      if (meta.kinds[pair[1]] & CHANGE_KIND) option($("f-rule"), String(pair[1]), pair[0]);
      if (meta.kinds[pair[1]] & ERROR_KIND) option($("f-code"), String(pair[1]), pair[0]);
    });
    if (meta.groups.length) {
      meta.groups.forEach(function (g) { option($("f-group"), g, g); });
    } else {
      $("f-group").hidden = true;
    }
  }

  function hasCode(item, code, kind) {
    var diags = item[I.diags];
    for (var i = 0; i < diags.length; i++) {
      var d = diags[i];
      if (d[D.code] !== code) continue;
      if (kind === ERROR_KIND ? d[D.sev] === 0 : d[D.risk] >= 0) return true;
    }
    return false;
  }

  function matches(item, q) {
    if (item[I.id].toLowerCase().indexOf(q) >= 0) return true;
    if (item[I.text].toLowerCase().indexOf(q) >= 0) return true;
    var diags = item[I.diags];
    for (var i = 0; i < diags.length; i++) {
      if (diags[i][D.message].toLowerCase().indexOf(q) >= 0) return true;
      if (meta.codes[diags[i][D.code]].indexOf(q) >= 0) return true;
    }
    return false;
  }

  function worstSeverity(item) {
    var n = 0;
    item[I.diags].forEach(function (d) { if (d[D.sev] === 0) n++; });
    return n;
  }

  function apply() {
    var st = $("f-status").value, rk = $("f-risk").value, rule = $("f-rule").value;
    var code = $("f-code").value, group = $("f-group").value, failing = $("f-failing").checked;
    var q = $("q").value.trim().toLowerCase();
    view = [];
    for (var i = 0; i < items.length; i++) {
      var it = items[i];
      if (st !== "" && it[I.status] !== +st) continue;
      if (rk !== "" && it[I.risk] !== +rk) continue;
      if (group !== "" && it[I.group] !== group) continue;
      if (failing && !(it[I.flags] & FLAG.gate)) continue;
      if (rule !== "" && !hasCode(it, +rule, CHANGE_KIND)) continue;
      if (code !== "" && !hasCode(it, +code, ERROR_KIND)) continue;
      if (q && !matches(it, q)) continue;
      view.push(i);
    }
    var sort = $("sort").value;
    var key = null;
    if (sort === "status") {
      key = function (i) { return -items[i][I.status]; };  // meta.statuses: best first
    } else if (sort === "risk") {
      key = function (i) { return -items[i][I.risk]; };
    } else if (sort === "problems") {
      key = function (i) { return -(worstSeverity(items[i]) * 1e6 + items[i][I.diags].length); };
    }
    if (key) {
      var keys = {};
      view.forEach(function (i) { keys[i] = key(i); });
      view.sort(function (a, b) { return keys[a] - keys[b] || a - b; });
    } else if (sort === "id") {
      view.sort(function (a, b) {
        var x = items[a][I.id], y = items[b][I.id];
        return x < y ? -1 : x > y ? 1 : a - b;
      });
    }
    $("shown").textContent = view.length.toLocaleString("en") + " of " +
      items.length.toLocaleString("en") + " items";
    $("spacer").style.height = view.length * ROW + "px";
    $("viewport").scrollTop = 0;
    render(true);
  }

  // --------------------------------------------------------------- the list

  var rendered = { first: -1, last: -1 };

  function render(force) {
    var port = $("viewport");
    var first = Math.max(0, Math.floor(port.scrollTop / ROW) - EXTRA);
    var last = Math.min(view.length, Math.ceil((port.scrollTop + port.clientHeight) / ROW) + EXTRA);
    if (!force && first === rendered.first && last === rendered.last) return;
    rendered = { first: first, last: last };
    var spacer = $("spacer");
    while (spacer.firstChild) spacer.removeChild(spacer.firstChild);
    for (var k = first; k < last; k++) spacer.appendChild(row(view[k], k));
  }

  function row(index, position) {
    var it = items[index];
    var node = el("div", "row item");
    node.style.top = position * ROW + "px";
    node.setAttribute("data-index", String(index));
    node.setAttribute("role", "button");
    node.tabIndex = 0;
    if (index === opened) node.classList.add("open");
    node.appendChild(el("span", "id", it[I.id]));
    var status = statusName(it);
    var badge = el("span", "badge s-" + status, meta.labels[it[I.status]] || status);
    if (it[I.flags] & FLAG.failed) badge.classList.add("failed");
    var cell = el("span");
    cell.appendChild(badge);
    if (it[I.flags] & FLAG.baselined) cell.appendChild(el("span", "known", "known"));
    node.appendChild(cell);
    node.appendChild(el("span", "risk r-" + riskName(it[I.risk]), riskName(it[I.risk])));
    node.appendChild(el("span", "group", it[I.group] === null ? "" : it[I.group]));
    var diags = it[I.diags];
    var first = diags.filter(function (d) { return d[D.sev] === 0; })[0] || diags[0];
    var summary = first ? diags.length + " · " + meta.codes[first[D.code]] : "";
    if (it[I.tool] !== null) summary = "tool " + (it[I.tool] || "(no name)") + " · " + summary;
    node.appendChild(el("span", "diags", summary));
    return node;
  }

  // --------------------------------------------------------------- one item

  function open(index) {
    var it = items[index];
    if (!it) return;
    opened = index;
    var box = $("detail");
    while (box.firstChild) box.removeChild(box.firstChild);
    box.hidden = false;
    var head = el("div", "detail-head");
    head.appendChild(el("h3", null, it[I.id]));
    var close = el("button", "close", "close");
    close.type = "button";
    close.addEventListener("click", function () { shut(); });
    head.appendChild(close);
    box.appendChild(head);
    var facts = el("p", "facts");
    facts.appendChild(el("span", "badge s-" + statusName(it), meta.labels[it[I.status]]));
    if (it[I.risk] >= 0) facts.appendChild(el("span", "risk r-" + riskName(it[I.risk]),
      "highest risk: " + riskName(it[I.risk])));
    if (it[I.group] !== null) facts.appendChild(el("span", "group", "group: " + it[I.group]));
    if (it[I.flags] & FLAG.baselined) facts.appendChild(el("span", "known", "known (baseline)"));
    if (it[I.attempts]) facts.appendChild(el("span", "attempts", "LLM attempts: " + it[I.attempts]));
    box.appendChild(facts);
    if (it[I.failures].length) {
      var fails = el("ul", "failures");
      it[I.failures].forEach(function (f) {
        fails.appendChild(el("li", null, (it[I.flags] & FLAG.baselined ? "known: " : "fails: ") + f));
      });
      box.appendChild(fails);
    }
    if (it[I.tool] !== null) box.appendChild(siblingCalls(index));
    box.appendChild(el("h4", null, "Answer, with each diagnostic's span highlighted"));
    box.appendChild(answer(it));
    if (it[I.flags] & FLAG.textCut) box.appendChild(el("p", "note", "answer cut for the report"));
    box.appendChild(diagnosticTable(it));
    if (it[I.flags] & FLAG.calls && it[I.calls]) box.appendChild(calls(it));
    box.appendChild(el("h4", null, "Repaired value"));
    var value = it[I.value];
    if (value === null && statusName(it) === "valid") value = it[I.text];
    box.appendChild(el("pre", "value", value === null ? "(no value)" : value));
    if (it[I.flags] & FLAG.valueCut) box.appendChild(el("p", "note", "value cut for the report"));
    if (it[I.patch].length) box.appendChild(patchTable(it));
    Array.prototype.forEach.call(document.querySelectorAll(".row.open"), function (n) {
      n.classList.remove("open");
    });
    var shownRow = document.querySelector('.row[data-index="' + index + '"]');
    if (shownRow) shownRow.classList.add("open");
    if (location.hash !== "#item=" + index) history.replaceState(null, "", "#item=" + index);
  }

  function shut() {
    opened = -1;
    $("detail").hidden = true;
    history.replaceState(null, "", location.pathname);
    render(true);
  }

  function markClass(diags, which) {
    var rank = 0; // lossless, change, guess, error: the worst one colours the mark
    which.forEach(function (k) {
      var d = diags[k];
      rank = Math.max(rank, d[D.sev] === 0 ? 3 : d[D.risk] === 2 ? 2 : d[D.risk] === 0 ? 0 : 1);
    });
    return "hl m-" + ["lossless", "change", "guess", "error"][rank];
  }

  // The answer split at every span boundary; each piece inside a span is a <mark> that
  // lists its diagnostics (data-d). A span of no width is an empty marker.
  function answer(it) {
    var text = it[I.text], diags = it[I.diags];
    var pre = el("pre", "answer");
    pre.id = "answer";
    var cuts = [0, text.length];
    diags.forEach(function (d) { if (d[D.start] >= 0) cuts.push(d[D.start], d[D.end]); });
    cuts = cuts.filter(function (c, i, all) { return all.indexOf(c) === i; });
    cuts.sort(function (a, b) { return a - b; });
    for (var c = 0; c < cuts.length; c++) {
      var at = cuts[c];
      var empty = [];
      diags.forEach(function (d, k) { if (d[D.start] === at && d[D.end] === at) empty.push(k); });
      if (empty.length) pre.appendChild(mark(diags, empty, "", true));
      if (c + 1 >= cuts.length) break;
      var end = cuts[c + 1], piece = text.slice(at, end);
      var covering = [];
      diags.forEach(function (d, k) {
        if (d[D.start] >= 0 && d[D.start] <= at && d[D.end] >= end && d[D.end] > d[D.start]) {
          covering.push(k);
        }
      });
      pre.appendChild(covering.length ? mark(diags, covering, piece, false)
        : document.createTextNode(visible(piece)));
    }
    return pre;
  }

  function mark(diags, which, piece, empty) {
    var node = el("mark", markClass(diags, which) + (empty ? " zw" : ""), piece);
    node.setAttribute("data-d", which.join(" "));
    node.tabIndex = 0;
    return node;
  }

  function diagnosticTable(it) {
    var wrap = el("div");
    wrap.appendChild(el("h4", null, "Diagnostics"));
    var diags = it[I.diags];
    if (!diags.length) {
      wrap.appendChild(el("p", "none", "none"));
      return wrap;
    }
    var table = el("table", "diagnostics");
    var head = el("tr");
    ["code", "severity", "risk", "where", "message"].forEach(function (h) {
      head.appendChild(el("th", null, h));
    });
    table.appendChild(head);
    diags.forEach(function (d, k) {
      var tr = el("tr", "sev-" + meta.severities[d[D.sev]]);
      tr.setAttribute("data-d", String(k));
      tr.appendChild(el("td", "code", meta.codes[d[D.code]]));
      tr.appendChild(el("td", null, meta.severities[d[D.sev]]));
      tr.appendChild(el("td", "risk r-" + riskName(d[D.risk]), riskName(d[D.risk])));
      var where = d[D.pointer] !== null ? (d[D.pointer] || "/") : "";
      if (d[D.start] >= 0 && d[D.pointer] === null) {
        where += (where ? " · " : "") + "chars " + d[D.start] + "–" + d[D.end];
      }
      tr.appendChild(el("td", "where", where));
      var msg = el("td", null, d[D.message]);
      if (d[D.hint]) msg.appendChild(el("div", "hint", "hint: " + d[D.hint]));
      tr.appendChild(msg);
      table.appendChild(tr);
    });
    wrap.appendChild(table);
    if (it[I.flags] & FLAG.diagCut) wrap.appendChild(el("p", "note", "more diagnostics cut"));
    return wrap;
  }

  function calls(it) {
    var wrap = el("div", "calls");
    wrap.appendChild(el("h4", null, "Tool calls"));
    var diags = it[I.diags];
    it[I.calls].forEach(function (call, n) {
      var box = el("div", "call");
      var prefix = "/" + n;
      var own = diags.filter(function (d) {
        var p = d[D.pointer];
        return p !== null && (p === prefix || p.indexOf(prefix + "/") === 0);
      });
      var bad = own.some(function (d) { return d[D.sev] === 0; });
      box.appendChild(el("div", "call-head " + (bad ? "bad" : "ok"),
        "#" + n + " " + (call[0] === null ? "(no name)" : call[0]) +
        (bad ? " — fails its checks" : own.length ? " — passes, with changes" : " — passes")));
      box.appendChild(el("pre", "value", call[1]));
      var list = el("ul", "checks");
      own.forEach(function (d) {
        list.appendChild(el("li", "sev-" + meta.severities[d[D.sev]],
          meta.codes[d[D.code]] + ": " + d[D.message]));
      });
      if (!own.length) list.appendChild(el("li", "sev-ok", "arguments valid against the tool"));
      box.appendChild(list);
      wrap.appendChild(box);
    });
    return wrap;
  }

  // A tool call of `check` is an item (ID:tK); the calls of the same message sit next to
  // each other in input order. Each is listed with the outcome of its checks.
  function siblingCalls(index) {
    var wrap = el("div", "calls");
    wrap.appendChild(el("h4", null, "Tool calls of this message"));
    var prefix = items[index][I.id].replace(/\.call\d+$/, ".call");  // id …#msg0.callK
    function sibling(k) {
      return items[k] && items[k][I.tool] !== null && items[k][I.id].indexOf(prefix) === 0;
    }
    var first = index, last = index;
    while (first > 0 && sibling(first - 1)) first--;
    while (last + 1 < items.length && sibling(last + 1)) last++;
    var list = el("ul", "sibling-calls");
    for (var k = first; k <= last; k++) {
      var call = items[k];
      var errors = call[I.diags].filter(function (d) { return d[D.sev] === 0; });
      var entry = el("li", errors.length ? "bad" : "ok");
      entry.setAttribute("data-index", String(k));
      var name = el("button", "call-link", call[I.id].slice(prefix.length - 4) + " " +
        (call[I.tool] || "(no name)"));
      name.type = "button";
      if (k === index) name.disabled = true;
      entry.appendChild(name);
      entry.appendChild(el("span", "badge s-" + statusName(call), meta.labels[call[I.status]]));
      var checks = errors.length ? errors.map(function (d) { return meta.codes[d[D.code]]; })
        .join(", ") : call[I.diags].length ? "passes, with changes" : "passes its checks";
      entry.appendChild(el("span", "call-checks", checks));
      list.appendChild(entry);
    }
    list.addEventListener("click", function (event) {
      var node = event.target.closest("li[data-index]");
      if (node && event.target.closest("button")) open(+node.getAttribute("data-index"));
    });
    wrap.appendChild(list);
    wrap.appendChild(el("p", "note", "this call's arguments are the answer below"));
    return wrap;
  }

  function patchTable(it) {
    var wrap = el("div");
    wrap.appendChild(el("h4", null, "Schema repairs (JSON Patch, before → after)"));
    var table = el("table", "patch");
    var head = el("tr");
    ["op", "path", "before", "after", "rule", "risk"].forEach(function (h) {
      head.appendChild(el("th", null, h));
    });
    table.appendChild(head);
    it[I.patch].forEach(function (op) {
      var tr = el("tr");
      tr.title = visible(String(op[6]));
      tr.appendChild(el("td", null, op[0]));
      tr.appendChild(el("td", "code", op[1] || "/"));
      tr.appendChild(el("td", "before", op[2]));
      tr.appendChild(el("td", "after", op[3]));
      tr.appendChild(el("td", "code", op[4]));
      tr.appendChild(el("td", "risk r-" + meta.risks[op[5]], meta.risks[op[5]]));
      table.appendChild(tr);
    });
    wrap.appendChild(table);
    return wrap;
  }

  // ----------------------------------------------------------------- tooltip

  function showTip(target) {
    var it = items[opened];
    if (!it) return;
    var tip = $("tip");
    while (tip.firstChild) tip.removeChild(tip.firstChild);
    target.getAttribute("data-d").split(" ").forEach(function (k) {
      var d = it[I.diags][+k];
      if (!d) return;
      var entry = el("div", "tip-entry sev-" + meta.severities[d[D.sev]]);
      entry.appendChild(el("strong", null, meta.codes[d[D.code]]));
      entry.appendChild(el("span", null, " " + meta.severities[d[D.sev]] +
        (d[D.risk] >= 0 ? " · risk " + meta.risks[d[D.risk]] : "")));
      entry.appendChild(el("div", null, d[D.message]));
      if (d[D.pointer] !== null) entry.appendChild(el("div", "where", "at " + (d[D.pointer] || "/")));
      tip.appendChild(entry);
    });
    var box = target.getBoundingClientRect();
    tip.hidden = false;
    tip.style.left = Math.max(4, Math.min(box.left + window.scrollX,
      window.scrollX + document.documentElement.clientWidth - tip.offsetWidth - 4)) + "px";
    tip.style.top = box.bottom + window.scrollY + 4 + "px";
  }

  // ------------------------------------------------------------------- wiring

  function start() {
    $("controls").hidden = false;
    $("list").hidden = false;
    fillFilters();
    var again = null;
    $("q").addEventListener("input", function () {
      clearTimeout(again);
      again = setTimeout(apply, items.length > 20000 ? 250 : 60);
    });
    ["f-status", "f-risk", "f-rule", "f-code", "f-group", "f-failing", "sort"].forEach(
      function (id) { $(id).addEventListener("change", apply); });
    $("viewport").addEventListener("scroll", function () { render(false); });
    document.querySelector(".row.head").addEventListener("click", function (event) {
      var sort = event.target.getAttribute("data-sort");
      if (!sort) return;
      $("sort").value = $("sort").value === sort ? "input" : sort;  // a second click: input order
      apply();
    });
    $("spacer").addEventListener("click", function (event) {
      var node = event.target.closest(".row");
      if (node) open(+node.getAttribute("data-index"));
    });
    $("spacer").addEventListener("keydown", function (event) {
      var node = event.target.closest(".row");
      if (node && (event.key === "Enter" || event.key === " ")) {
        event.preventDefault();
        open(+node.getAttribute("data-index"));
      }
    });
    $("detail").addEventListener("mouseover", function (event) {
      var node = event.target.closest("mark[data-d]");
      if (node) showTip(node);
    });
    $("detail").addEventListener("focusin", function (event) {
      var node = event.target.closest("mark[data-d]");
      if (node) showTip(node);
    });
    $("detail").addEventListener("mouseout", function (event) {
      if (event.target.closest("mark[data-d]")) $("tip").hidden = true;
    });
    apply();
    var hash = /^#item=(\d+)$/.exec(location.hash);
    if (hash) open(+hash[1]);
    document.body.setAttribute("data-ready", "1");
  }

  start();
})();
