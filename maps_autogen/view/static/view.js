(function () {
  "use strict";
  var rows = Array.prototype.slice.call(document.querySelectorAll("#index-table tbody tr"));
  var problems = Array.prototype.slice.call(document.querySelectorAll("section.problem"));
  var index = document.getElementById("index");
  var filters = Array.prototype.slice.call(document.querySelectorAll("select[data-filter]"));
  var counter = document.getElementById("filter-count");

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

  function applyFilters() {
    var shown = 0, correct = 0;
    rows.forEach(function (row) {
      var keep = matches(row);
      row.hidden = !keep;
      if (keep) { shown += 1; if (row.getAttribute("data-verdict") === "correct") { correct += 1; } }
    });
    if (counter) {
      var share = shown ? " (" + (100 * correct / shown).toFixed(1) + "% correct)" : "";
      counter.textContent = "showing " + shown + " of " + rows.length + share;
    }
  }

  // With problem sections, show either the index or the one problem the URL's #anchor names.
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

  filters.forEach(function (select) { select.addEventListener("change", applyFilters); });
  Array.prototype.forEach.call(document.querySelectorAll("button[data-details]"), function (button) {
    button.addEventListener("click", function () { setDetails(button); });
  });
  window.addEventListener("hashchange", route);
  applyFilters();
  route();
  document.documentElement.setAttribute("data-ready", "1");
})();
