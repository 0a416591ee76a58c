// Opened from disk (file://), the browser runs no search worker: the search box says how to serve the site instead.
document.addEventListener("DOMContentLoaded", function () {
  if (window.location.protocol !== "file:") return;
  document.querySelectorAll("input.md-search__input").forEach(function (box) {
    box.placeholder = "Search needs the site served: neurondev docs --serve";
    box.title = "A browser runs no search from file://: run `neurondev docs --serve` and open the address it prints";
  });
});
