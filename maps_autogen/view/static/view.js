(function () {
  "use strict";
  // The pages' only script (allowed by its hash). It reads data from escaped data-* attributes,
  // writes text with textContent, and adds live markup only as elements parsed by DOMParser
  // (an inert document: nothing in it runs) from fragments the server escaped.
  var tbody = document.querySelector("#index-table tbody");
  var problems = Array.prototype.slice.call(document.querySelectorAll("section.problem"));
  var index = document.getElementById("index");
  var filters = Array.prototype.slice.call(document.querySelectorAll("select[data-filter]"));
  // Laying out thousands of table rows takes seconds, so the index shows the matching rows a
  // page at a time (the CSS hides the rows past the first page until this script runs).
  var PAGE_ROWS = 500;
  var pageLimit = PAGE_ROWS;
  var more = document.getElementById("show-more");

  function rows() { return tbody ? Array.prototype.slice.call(tbody.rows) : []; }

  function matches(row) {
    return filters.every(function (select) {
      var want = select.value, key = select.getAttribute("data-filter");
      if (want === "") { return true; }
      var have = row.getAttribute("data-" + key) || "";
      if (key === "rollbacks") {
        if (want === "-") { return have === ""; }
        if (want === "*") { return have !== ""; }
        return (" " + have + " ").indexOf(" " + want + " ") >= 0;
      }
      return have === want;
    });
  }

  // Figure 4: where the reviewer's first decision went, over the shown problems that finished
  // (a failed one too: the server names its bar, "no usable review" when no review decided).
  function drawHistogram(shownRows) {
    var table = document.getElementById("feedback-histogram");
    if (!table) { return; }
    var counts = {}, total = 0;
    shownRows.forEach(function (row) {
      var target = row.getAttribute("data-feedback");
      if (row.getAttribute("data-verdict") === "unfinished" || !target) { return; }  // no decision yet is not "none"
      counts[target] = (counts[target] || 0) + 1;
      total += 1;
    });
    Array.prototype.forEach.call(table.querySelectorAll("tr[data-target]"), function (bar) {
      var count = counts[bar.getAttribute("data-target")] || 0;
      var meter = bar.querySelector("progress");
      meter.max = total || 1;
      meter.value = count;
      bar.querySelector(".count").textContent = String(count);
      bar.querySelector(".share").textContent = total ? (100 * count / total).toFixed(1) + "%" : "–";
    });
  }

  function applyFilters() {
    // Accuracy as the server's tally counts it: correct of the scored (failed and unfinished rows are not scored).
    var all = rows(), shown = [], scored = 0, correct = 0;
    all.forEach(function (row) {
      var keep = matches(row), verdict = row.getAttribute("data-verdict");
      row.hidden = !keep || shown.length >= pageLimit;
      if (keep) {
        shown.push(row);
        if (verdict !== "failed" && verdict !== "unfinished") { scored += 1; }
        if (verdict === "correct") { correct += 1; }
      }
    });
    var counter = document.getElementById("filter-count");
    if (counter) {
      var share = scored ? " (" + (100 * correct / scored).toFixed(2) + "% correct of " + scored + " scored)" : "";
      counter.textContent = "showing " + shown.length + " of " + all.length + share;
    }
    if (more) {
      var rest = shown.length - Math.min(shown.length, pageLimit);
      more.hidden = rest === 0;
      more.textContent = "show " + Math.min(rest, PAGE_ROWS) + " more (" + rest + " not listed yet)";
    }
    drawHistogram(shown);
  }

  function filtersChanged() { pageLimit = PAGE_ROWS; applyFilters(); }

  // With problem sections (one file), show either the index or the one problem the #anchor names.
  function route() {
    if (!problems.length) { return; }
    var target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    var one = target !== null && problems.indexOf(target) >= 0;
    problems.forEach(function (section) { section.hidden = !(one && section === target); });
    if (index) { index.hidden = one; }
    if (one) { window.scrollTo(0, 0); }
  }

  function setDetails(button) {
    var scope = button.closest("section.problem") || document;
    var open = button.getAttribute("data-details") === "open";
    Array.prototype.forEach.call(scope.querySelectorAll("details"), function (d) { d.open = open; });
  }

  // ----- live updates (served pages only) ------------------------------------------------------

  function parseFragment(markup, inTable) {
    var wrapped = inTable ? "<table><tbody>" + markup + "</tbody></table>" : markup;
    var doc = new DOMParser().parseFromString("<!DOCTYPE html><body>" + wrapped, "text/html");
    var parent = inTable ? doc.querySelector("tbody") : doc.body;
    return Array.prototype.map.call(parent ? parent.children : [], function (node) { return document.importNode(node, true); });
  }

  function addFilterOptions(row) {
    filters.forEach(function (select) {
      var key = select.getAttribute("data-filter");
      var values = key === "rollbacks" ? (row.getAttribute("data-rollbacks") || "").split(" ") : [row.getAttribute("data-" + key) || ""];
      values.forEach(function (value) {
        if (value === "" || Array.prototype.some.call(select.options, function (o) { return o.value === value; })) { return; }
        var option = document.createElement("option");
        option.value = value;
        option.textContent = value;
        select.appendChild(option);
      });
    });
  }

  function appendTo(feed, markup) {
    var placeholder = feed.querySelector(".empty");
    if (placeholder) { placeholder.remove(); }
    if (feed.id === "index") {
      parseFragment(markup, true).forEach(function (row) {
        var old = tbody.querySelector('tr[data-key="' + CSS.escape(row.getAttribute("data-key") || "") + '"]');
        if (old) { old.replaceWith(row); } else { tbody.appendChild(row); }
        addFilterOptions(row);
      });
      applyFilters();
    } else {
      parseFragment(markup, false).forEach(function (node) { feed.appendChild(node); });
    }
  }

  function replaceById(markup) {
    parseFragment(markup, false).forEach(function (node) {
      var old = node.id ? document.getElementById(node.id) : null;
      if (old) { old.replaceWith(node); }
    });
    applyFilters();
  }

  function follow(feed) {
    var status = document.getElementById("live-status");
    function say(text) { if (status) { status.textContent = "live updates: " + text; } }
    var source = new EventSource(feed.getAttribute("data-live"));
    source.addEventListener("open", function () { say("on"); });
    source.addEventListener("error", function () { say("disconnected (retrying; the page keeps what it has)"); });
    source.addEventListener("append", function (event) { appendTo(feed, JSON.parse(event.data).html); });
    source.addEventListener("replace", function (event) { replaceById(JSON.parse(event.data).html); });
    source.addEventListener("reload", function () { source.close(); location.reload(); });
    source.addEventListener("finished", function (event) { source.close(); say(JSON.parse(event.data).status); });
  }

  // While a call is under way the live page says who is thinking, and for how long.
  function tickThinking() {
    var marker = document.getElementById("thinking");
    var elapsed = marker && !marker.hidden ? marker.querySelector(".elapsed") : null;
    var since = marker ? Number(marker.getAttribute("data-since")) : 0;
    if (elapsed && since > 0) {
      elapsed.textContent = Math.max(0, Math.round((Date.now() - since) / 1000)) + " s";
    }
  }

  filters.forEach(function (select) { select.addEventListener("change", filtersChanged); });
  if (more) { more.addEventListener("click", function () { pageLimit += PAGE_ROWS; applyFilters(); }); }
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-details]") : null;
    if (button) { setDetails(button); }
  });
  window.addEventListener("hashchange", route);
  applyFilters();
  route();
  Array.prototype.forEach.call(document.querySelectorAll("[data-live]"), follow);
  if (document.querySelector("[data-live]")) { tickThinking(); window.setInterval(tickThinking, 1000); }
  document.documentElement.setAttribute("data-ready", "1");
})();
