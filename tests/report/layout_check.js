// Injected at the end of a page rendered by headless Chromium: measures every SVG text
// label and every table cell, and writes the verdict into the DOM as JSON in
// <pre id="layout-verdict"> (read back from --dump-dom by check_layout.py).
//   overflow: a label outside its SVG's viewport, a table cell whose text is wider than
//             the cell, an SVG wider than the page
//   overlap:  two labels of one SVG whose boxes intersect, or a label over a bar
//             (an element of class "bar")
(function () {
  const tolerance = 0.5;  // px: rounding of the layout
  const problems = [];
  const describe = (el) => {
    const text = (el.textContent || "").trim().slice(0, 60);
    return el.tagName.toLowerCase() + " '" + text + "'";
  };
  const intersect = (a, b) =>
    Math.min(a.right, b.right) - Math.max(a.left, b.left) > tolerance &&
    Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > tolerance;
  let labels = 0;
  const page = document.documentElement.getBoundingClientRect();
  document.querySelectorAll("svg").forEach((svg, index) => {
    const view = svg.getBoundingClientRect();
    if (view.right > Math.max(page.right, window.innerWidth) + tolerance)
      problems.push({kind: "overflow", svg: index, what: "svg wider than the page", right: view.right});
    const texts = Array.from(svg.querySelectorAll("text"));
    const boxes = texts.map((t) => t.getBoundingClientRect());
    const bars = Array.from(svg.querySelectorAll(".bar")).map((b) => b.getBoundingClientRect());
    labels += texts.length;
    texts.forEach((t, i) => {
      const r = boxes[i];
      if (r.width <= 0 || r.height <= 0) {
        problems.push({kind: "overflow", svg: index, what: describe(t) + " has no size"});
        return;
      }
      if (r.left < view.left - tolerance || r.right > view.right + tolerance || r.top < view.top - tolerance ||
          r.bottom > view.bottom + tolerance)
        problems.push({kind: "overflow", svg: index, what: describe(t) + " leaves the SVG viewport",
                       box: [r.left, r.top, r.right, r.bottom], viewport: [view.left, view.top, view.right, view.bottom]});
      for (let j = i + 1; j < texts.length; ++j)
        if (intersect(r, boxes[j]))
          problems.push({kind: "overlap", svg: index, what: describe(t) + " overlaps " + describe(texts[j])});
      bars.forEach((b) => {
        if (intersect(r, b)) problems.push({kind: "overlap", svg: index, what: describe(t) + " overlaps a bar"});
      });
    });
  });
  let cells = 0;
  document.querySelectorAll("td, th, h1, h2").forEach((c) => {
    ++cells;
    if (c.scrollWidth > c.clientWidth + 1)
      problems.push({kind: "overflow", what: describe(c) + " is wider than its box",
                     scroll: c.scrollWidth, client: c.clientWidth});
  });
  const pre = document.createElement("pre");
  pre.id = "layout-verdict";
  pre.textContent = JSON.stringify({labels: labels, cells: cells, problems: problems});
  document.body.appendChild(pre);
})();
