"""The report page's script (plain JavaScript, inlined into ``index.html``): sortable tables,
the choosers (languages, tokenizers, reference language) and the sentence view.

Kept as a Python string so that the wheel carries it without package-data rules.

Internal: the public API is the top-level ``cybpe`` package.
"""

SCRIPT = r"""/* The report page's interactive part: plain JavaScript, no library, nothing fetched.
   Reads the JSON in #explore-data; draws the chooser-driven table, chart and sentence view;
   makes every table.sortable sortable by a click on its header. */
(function () {
  'use strict';
  var PALETTE = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#000000', '#F0E442'];
  var MARKS = ['●', '■', '▲', '◆', '▼', '◀', '▶', '✚'];

  function sortable(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, col) {
      th.classList.add('sort');
      th.title = 'sort by this column';
      th.addEventListener('click', function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var dir = th.getAttribute('data-dir') === 'asc' ? 'desc' : 'asc';
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('data-dir'); });
        th.setAttribute('data-dir', dir);
        var key = function (row) {
          var cell = row.cells[col];
          var raw = cell ? (cell.getAttribute('data-v') || cell.textContent) : '';
          var num = parseFloat(raw.replace(/,/g, ''));
          return isNaN(num) ? raw.toLowerCase() : num;
        };
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          if (typeof x !== typeof y) { x = String(x); y = String(y); }
          var r = x < y ? -1 : x > y ? 1 : 0;
          return dir === 'asc' ? r : -r;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  }

  function fmt(x, d) { return x === null || x === undefined || !isFinite(x) ? '–' : x.toFixed(d === undefined ? 2 : d); }
  function esc(s) { return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;'); }
  function gini(xs) {
    var n = xs.length, s = 0, t = 0, i, j;
    for (i = 0; i < n; i++) { t += xs[i]; for (j = 0; j < n; j++) { s += Math.abs(xs[i] - xs[j]); } }
    return n && t ? s / (2 * n * n * (t / n)) : 0;
  }
  function cv(xs) {
    var n = xs.length, m = 0, v = 0;
    if (!n) { return 0; }
    xs.forEach(function (x) { m += x / n; });
    xs.forEach(function (x) { v += (x - m) * (x - m) / n; });
    return m ? Math.sqrt(v) / m : 0;
  }
  function checked(name) {
    return Array.prototype.filter.call(document.querySelectorAll('input[name="' + name + '"]'),
      function (b) { return b.checked; }).map(function (b) { return b.value; });
  }

  var holder = document.getElementById('explore-data');
  if (holder) {
    var D = JSON.parse(holder.textContent);
    var byCode = {};
    D.languages.forEach(function (l) { byCode[l.code] = l; });
    var colIndex = {};
    D.columns.forEach(function (c, i) { colIndex[c.name] = i; });

    var state = function () {
      var ref = document.getElementById('ref').value;
      var langs = checked('lang');
      var cols = D.columns.filter(function (c) { return checked('col').indexOf(c.name) >= 0; });
      var refWords = byCode[ref].words;
      var cost = function (c, code) { return c.tokens[code] / refWords; };
      var mean = function (code) {
        var s = 0; cols.forEach(function (c) { s += cost(c, code); }); return cols.length ? s / cols.length : 0;
      };
      var order = D.languages.filter(function (l) { return langs.indexOf(l.code) >= 0; }).map(function (l) { return l.code; });
      order.sort(function (a, b) { return (byCode[a].rank - byCode[b].rank) || (mean(a) - mean(b)) || (a < b ? -1 : 1); });
      return { ref: ref, langs: order, cols: cols, cost: cost };
    };

    var renderTable = function (s) {
      var h = '<thead><tr><th>lang</th><th>language (script group)</th>';
      s.cols.forEach(function (c) {
        h += '<th>' + esc(c.label) + '<br>cost</th><th>' + esc(c.label) + '<br>premium</th>';
      });
      h += '</tr></thead><tbody>';
      s.langs.forEach(function (code) {
        var l = byCode[code];
        h += '<tr data-lang="' + esc(code) + '"><td>' + esc(code) + '</td><td>' + esc(l.name + ' (' + l.group + ')') + '</td>';
        s.cols.forEach(function (c) {
          var flag = c.flags[code] === 'none' ? ' †' : c.flags[code] === 'little' ? ' *' : '';
          var cost = s.cost(c, code), prem = c.tokens[code] / c.tokens[s.ref];
          h += '<td class=n data-v="' + cost + '">' + fmt(cost) + flag + '</td><td class=n data-v="' + prem + '">' + fmt(prem) + '</td>';
        });
        h += '</tr>';
      });
      h += '</tbody><tfoot>';
      var foot = [['Gini of the costs', function (c) { return fmt(gini(s.langs.map(function (k) { return s.cost(c, k); })), 3); }],
                  ['CV of the costs', function (c) { return fmt(cv(s.langs.map(function (k) { return s.cost(c, k); })), 3); }],
                  ['worst premium', function (c) {
                    var worst = null;
                    s.langs.forEach(function (k) {
                      if (k === s.ref) { return; }
                      var p = c.tokens[k] / c.tokens[s.ref];
                      if (worst === null || p > worst[0]) { worst = [p, k]; }
                    });
                    return worst ? fmt(worst[0]) + ' (' + worst[1] + ')' : '–';
                  }]];
      foot.forEach(function (f) {
        h += '<tr><th colspan=2>' + f[0] + '</th>';
        s.cols.forEach(function (c) { h += '<td class=n colspan=2>' + f[1](c) + '</td>'; });
        h += '</tr>';
      });
      h += '</tfoot>';
      var table = document.getElementById('explore-table');
      table.innerHTML = h;
      sortable(table);
    };

    var renderChart = function (s) {
      var box = document.getElementById('explore-chart');
      var values = [];
      s.cols.forEach(function (c) { s.langs.forEach(function (k) { values.push(s.cost(c, k)); }); });
      if (!values.length) { box.innerHTML = '<p>Choose at least one language and one tokenizer.</p>'; return; }
      var lo = Math.min.apply(null, values) / 1.15, hi = Math.max.apply(null, values) * 1.15;
      var left = 190, width = 560, row = 18, top = 22, n = s.cols.length;
      var x = function (v) { return left + width * (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo)); };
      var height = top + row * s.langs.length + 30;
      var g = '<svg role="img" aria-label="cost per word of the reference, per language and tokenizer" width="' +
        (left + width + 110) + '" height="' + height + '" font-size="11" font-family="sans-serif">';
      var ticks = [0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200];
      ticks.forEach(function (t) {
        if (t < lo || t > hi) { return; }
        g += '<line x1="' + x(t) + '" x2="' + x(t) + '" y1="' + top + '" y2="' + (height - 24) + '" stroke="#ddd"/>' +
          '<text x="' + x(t) + '" y="' + (height - 10) + '" text-anchor="middle">' + t + '</text>';
      });
      var lastGroup = null;
      s.langs.forEach(function (code, i) {
        var y = top + row * i + row / 2, l = byCode[code];
        if (l.group !== lastGroup) {
          if (i) { g += '<line x1="0" x2="' + (left + width) + '" y1="' + (y - row / 2) + '" y2="' + (y - row / 2) + '" stroke="#999"/>'; }
          g += '<text x="' + (left + width + 6) + '" y="' + (y + 4) + '" fill="#555">' + esc(l.group) + '</text>';
          lastGroup = l.group;
        }
        g += '<text x="' + (left - 6) + '" y="' + (y + 4) + '" text-anchor="end">' + esc(l.name + ' (' + code + ')') + '</text>';
        s.cols.forEach(function (c, k) {
          var dy = n > 1 ? Math.min(0.6, 0.15 * (n - 1)) * row * (k / (n - 1) - 0.5) : 0;
          var i0 = colIndex[c.name];
          var hollow = c.flags[code] ? ' fill="white" stroke-width="1.5"' : ' fill="' + PALETTE[i0 % 8] + '"';
          g += '<circle class="dot" cx="' + x(s.cost(c, code)).toFixed(1) + '" cy="' + (y + dy).toFixed(1) + '" r="3.5" stroke="' +
            PALETTE[i0 % 8] + '"' + hollow + '><title>' + esc(c.label + ', ' + code + ': ' + fmt(s.cost(c, code))) + '</title></circle>';
        });
      });
      g += '<text x="' + (left + width / 2) + '" y="12" text-anchor="middle">tokens per ' + esc(s.ref) +
        '-word equivalent (log axis; hollow: little or no training text)</text></svg>';
      var legend = '<p class=legend>' + s.cols.map(function (c) {
        return '<span style="color:' + PALETTE[colIndex[c.name] % 8] + '">●</span> ' + esc(c.label);
      }).join(' &nbsp; ') + '</p>';
      box.innerHTML = g + legend;
    };

    var pieces = function (bytes, lengths) {
      var out = [], at = 0;
      lengths.forEach(function (n) { out.push(bytes.slice(at, at + n)); at += n; });
      return out;
    };
    var hex = function (b) { return Array.prototype.map.call(b, function (x) { return (x < 16 ? '0' : '') + x.toString(16); }).join(' '); };
    var showToken = function (b) {
      // whole characters as text; bytes of a character cut by a token boundary as hex
      var i = 0, j = b.length, html = '';
      while (i < j && (b[i] & 0xC0) === 0x80) { i++; }
      for (var k = Math.max(i, j - 3); k < j; k++) {
        var need = b[k] >= 0xF0 ? 4 : b[k] >= 0xE0 ? 3 : b[k] >= 0xC0 ? 2 : 1;
        if ((b[k] & 0xC0) !== 0x80 && k + need > j) { j = k; break; }
      }
      if (i > 0) { html += '<span class=partial>' + hex(b.slice(0, i)) + '</span>'; }
      if (j > i) {
        try {
          var text = new TextDecoder('utf-8', { fatal: true }).decode(b.slice(i, j));
          html += esc(text.replace(/ /g, '·').replace(/\n/g, '↵').replace(/\t/g, '→'));
        } catch (e) {
          html += '<span class=partial>' + hex(b.slice(i, j)) + '</span>';
        }
      }
      if (j < b.length) { html += '<span class=partial>' + hex(b.slice(j)) + '</span>'; }
      return html;
    };

    var renderSentence = function (s) {
      var box = document.getElementById('sentence-view');
      if (!D.samples) { box.innerHTML = '<p>No sentences: the texts are not line-aligned.</p>'; return; }
      var i = parseInt(document.getElementById('sentence').value, 10);
      var lang = document.getElementById('sentence-lang').value;
      var text = D.samples.text[lang][i];
      var bytes = new TextEncoder().encode(text);
      var h = '<p class=source lang="' + esc(lang) + '">' + esc(text) + '</p><table class=tokens><tbody>';
      s.cols.forEach(function (c) {
        var lens = (D.samples.tokens[c.name] || {})[lang];
        if (!lens) { h += '<tr><th>' + esc(c.label) + '</th><td>–</td><td>(not available)</td></tr>'; return; }
        var list = lens[i] === '' ? [] : lens[i].split(',').map(Number);
        h += '<tr data-col="' + esc(c.name) + '"><th>' + esc(c.label) + '</th><td class=n>' + list.length + '</td><td>';
        pieces(bytes, list).forEach(function (b, k) {
          h += '<span class="tok t' + (k % 2) + '" title="' + b.length + ' bytes">' + showToken(b) + '</span>';
        });
        h += '</td></tr>';
      });
      box.innerHTML = h + '</tbody></table>';
    };

    var render = function () {
      var s = state();
      renderTable(s);
      renderChart(s);
      renderSentence(s);
      document.getElementById('explore-status').textContent =
        s.langs.length + ' languages, ' + s.cols.length + ' tokenizers, reference ' + s.ref;
    };
    Array.prototype.forEach.call(document.querySelectorAll('#explore input, #explore select'), function (el) {
      el.addEventListener('change', render);
    });
    Array.prototype.forEach.call(document.querySelectorAll('#explore button[data-group]'), function (bt) {
      bt.addEventListener('click', function () {
        var g = bt.getAttribute('data-group');
        var boxes = document.querySelectorAll('input[name="lang"][data-group="' + g + '"]');
        var any = Array.prototype.some.call(boxes, function (b) { return !b.checked; });
        Array.prototype.forEach.call(boxes, function (b) { b.checked = any; });
        render();
      });
    });
    render();
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), sortable);
}());
"""
