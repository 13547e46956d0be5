(function () {
  // a cell's sort key: a number where the whole value is one (its data-v, else its text),
  // else its text, compared number by number ('TF 2.2' < 'TF 2.10', '2.2.3' < '2.10.1')
  var NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;
  function key(cell) {
    var v = cell.getAttribute('data-v');
    if (v === null) { v = cell.textContent.trim(); }
    return NUMBER.test(v) ? [0, parseFloat(v)] : [1, v.toLowerCase()];
  }
  function compareText(a, b) {
    var x = a.match(/\d+|\D+/g) || [], y = b.match(/\d+|\D+/g) || [];
    for (var i = 0; i < Math.min(x.length, y.length); i++) {
      var dx = /^\d/.test(x[i]), dy = /^\d/.test(y[i]);
      if (dx && dy && +x[i] !== +y[i]) { return +x[i] - +y[i]; }
      if (x[i] !== y[i]) { return x[i] < y[i] ? -1 : 1; }
    }
    return x.length - y.length;
  }
  function sortBy(table, index, th) {
    var body = table.tBodies[0];
    if (!body) { return; }
    var dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.removeAttribute('aria-sort');
    });
    th.setAttribute('aria-sort', dir === 1 ? 'ascending' : 'descending');
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[index]), y = key(b.cells[index]);
      if (x[0] !== y[0]) { return x[0] - y[0]; }
      if (x[0] === 1) { return compareText(x[1], y[1]) * dir; }
      return (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0) * dir;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    if (!table.tHead) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      // reachable and usable by keyboard: Tab to a header, Enter or Space sorts
      th.tabIndex = 0;
      th.title = (th.title ? th.title + '; ' : '') + 'sort (click, or Enter)';
      th.setAttribute('aria-label', th.textContent + ': sort');
      th.addEventListener('click', function () { sortBy(table, i, th); });
      th.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sortBy(table, i, th); }
      });
    });
  });
  // stem plots: enlarge on click or Enter, close on a second click or Escape
  document.querySelectorAll('button.zoom').forEach(function (b) {
    b.setAttribute('aria-expanded', 'false');
    b.addEventListener('click', function () {
      var open = b.classList.toggle('open');
      b.setAttribute('aria-expanded', open ? 'true' : 'false');
    });
  });
  document.addEventListener('keydown', function (e) {
    if (e.key !== 'Escape') { return; }
    document.querySelectorAll('button.zoom.open').forEach(function (b) {
      b.classList.remove('open');
      b.setAttribute('aria-expanded', 'false');
    });
  });
  // package lists: search
  document.querySelectorAll('input.pkgfilter').forEach(function (input) {
    var list = document.getElementById(input.getAttribute('data-list'));
    if (!list) { return; }
    input.addEventListener('input', function () {
      var w = input.value.toLowerCase().trim();
      Array.prototype.forEach.call(list.children, function (li) {
        li.hidden = w !== '' && li.textContent.toLowerCase().indexOf(w) < 0;
      });
    });
  });
  // printing: the disclosures marked print-open open (restored afterwards); the others print
  // as their one-line summary, a digest whose details stay in the HTML file
  var closed = [];
  function openAll() {
    document.querySelectorAll('details.print-open:not([open])').forEach(function (d) {
      closed.push(d); d.open = true;
    });
  }
  function restore() { closed.forEach(function (d) { d.open = false; }); closed = []; }
  window.addEventListener('beforeprint', openAll);
  window.addEventListener('afterprint', restore);
  if (window.matchMedia) {
    var mq = window.matchMedia('print');
    var onChange = function (m) { if (m.matches) { openAll(); } else { restore(); } };
    if (mq.addEventListener) { mq.addEventListener('change', onChange); }
    if (mq.matches) { openAll(); }
  }
  document.querySelectorAll('input.filter').forEach(function (input) {
    var table = document.getElementById(input.getAttribute('data-table'));
    if (!table || !table.tBodies[0]) { return; }
    input.addEventListener('input', function () {
      var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var text = row.textContent.toLowerCase();
        var keep = words.every(function (w) { return text.indexOf(w) >= 0; });
        row.hidden = !keep;
        if (keep) { shown += 1; }
      });
      var counter = document.getElementById(input.getAttribute('data-table') + '-count');
      if (counter) { counter.textContent = shown + ' rows'; }
    });
  });
})();
