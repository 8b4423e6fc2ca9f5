// Progressive enhancement only: every page works without this script. It adds sorting (click a
// header) and a filter box to tables marked "sortable", and the two-run picker of a compare page.
(function () {
  "use strict";
  function cellValue(row, index) {
    var cell = row.children[index];
    var text = cell ? cell.textContent.trim() : "";
    var number = parseFloat(text.replace(/[$,%]/g, ""));
    return { text: text, number: isNaN(number) ? null : number };
  }
  function sortBy(table, index, header) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    rows.sort(function (a, b) {
      var x = cellValue(a, index), y = cellValue(b, index);
      var order;
      if (x.number !== null && y.number !== null) order = x.number - y.number;
      else if (x.number !== null) order = -1;
      else if (y.number !== null) order = 1;
      else order = x.text.localeCompare(y.text);
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  function enhance(table) {
    if (!table.tHead || !table.tBodies.length) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      th.classList.add("sortable-header");
      th.tabIndex = 0;
      th.title = (th.title ? th.title + " " : "") + "(click to sort)";
      th.addEventListener("click", function () { sortBy(table, index, th); });
      th.addEventListener("keydown", function (event) { if (event.key === "Enter") sortBy(table, index, th); });
    });
    var filter = document.createElement("input");
    filter.type = "search";
    filter.className = "table-filter";
    filter.placeholder = "Filter rows…";
    filter.setAttribute("aria-label", "filter the rows of the table below");
    filter.addEventListener("input", function () {
      var needle = filter.value.toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        row.hidden = needle !== "" && row.textContent.toLowerCase().indexOf(needle) < 0;
      });
    });
    var frame = table.closest(".table-frame") || table;
    frame.parentNode.insertBefore(filter, frame);
  }
  function picker(form) {
    var table = document.querySelector("table.compare");
    if (!table) return;
    form.hidden = false;
    function show() {
      var keep = [form.elements.a.value, form.elements.b.value];
      table.querySelectorAll("[data-run]").forEach(function (cell) {
        cell.hidden = keep.indexOf(cell.getAttribute("data-run")) < 0;
      });
    }
    form.addEventListener("change", show);
    show();
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("table.sortable").forEach(enhance);
    document.querySelectorAll("form.compare-picker").forEach(picker);
  });
})();
