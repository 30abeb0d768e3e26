// The desk's only script (the Content-Security-Policy allows no inline one). Pages work without it; it adds:
// a notice when new crawl runs have landed since the page was opened, and the search page's chart (uPlot).
"use strict";
(function () {
  function watchRuns() {
    var banner = document.getElementById("new-runs");
    if (!banner || !window.fetch) return;
    var seen = banner.getAttribute("data-since") || null;
    var first = true;
    function check() {
      fetch("/api/runs/latest", {credentials: "same-origin"}).then(function (response) {
        return response.ok ? response.json() : null;
      }).then(function (data) {
        if (!data) return;
        var latest = data.last_run_finished_at || null;
        if (first && !seen) { seen = latest; }
        else if (latest && latest !== seen) { banner.hidden = false; }
        first = false;
      }).catch(function () { /* the desk is down or restarting: try again at the next poll */ });
    }
    check();
    window.setInterval(check, Number(banner.getAttribute("data-poll-ms")) || 30000);
  }

  function chart() {
    var holder = document.getElementById("chart");
    if (!holder || !window.uPlot) return;
    fetch(holder.getAttribute("data-api"), {credentials: "same-origin"}).then(function (response) {
      return response.ok ? response.json() : null;
    }).then(function (data) {
      if (!data || !data.over_time || !data.over_time.days.length) return;
      var days = data.over_time.days.map(function (day) { return Date.parse(day + "T00:00:00+08:00") / 1000; });
      // Each site's line in the colour of its chip in the table below (one colour per site on every page).
      var colours = {};
      document.querySelectorAll("table.over-time th .chip").forEach(function (chip) {
        colours[chip.textContent] = window.getComputedStyle(chip).backgroundColor;
      });
      var names = Object.keys(data.over_time.sites);
      var series = [{}].concat(names.map(function (name) {
        return {label: name, stroke: colours[name] || "#777", width: 2, points: {show: true}};
      }));
      var values = [days].concat(names.map(function (name) { return data.over_time.sites[name]; }));
      var day = 86400;  // a day's margin either side: one day of matches is not drawn over years
      var range = [days[0] - day, days[days.length - 1] + day];
      new window.uPlot({width: Math.min(900, holder.clientWidth || 900), height: 220, series: series,
                        axes: [{}, {label: "matches"}],
                        scales: {x: {time: true, range: function () { return range; }}, y: {range: [0, null]}}},
                       values, holder);
      holder.setAttribute("data-drawn", "1");
    }).catch(function () { /* the table below the chart has the same figures */ });
  }

  document.addEventListener("DOMContentLoaded", function () { watchRuns(); chart(); });
})();
