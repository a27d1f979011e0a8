// kvoracle.Report: what a command shows, as the CLI prints it (text), as Markdown, its tables with
// exact numbers and its SVG plots; and the one way a call's result carries it (`result.report`).
#include "bindings_support.hpp"
#include "kvo/core/atomic_file.hpp"

namespace kvo::python {

py::object with_report(py::object value, Report report) {
  const py::module_ kvoracle = py::module_::import("kvoracle");
  py::object out = py::isinstance<py::list>(value) ? kvoracle.attr("Results")(value) : kvoracle.attr("Result")(value);
  out.attr("report") = py::cast(std::move(report));
  return out;
}

void bind_report(py::module_& m) {
  py::class_<Report>(m, "Report",
                     "what a command shows: `text` (as the CLI prints it), `markdown`, `tables` (each {columns, "
                     "rows}: a number cell's exact value, else its text) and `plots` (file name -> SVG); "
                     "save_plots(dir) writes the plots")
      .def_property_readonly("text", &Report::text)
      .def_property_readonly("markdown", &Report::markdown)
      .def_property_readonly("tables",
                             [](const Report& r) {
                               py::list out;
                               for (const Table& t : r.tables()) out.append(json_to_python(t.to_json()));
                               return out;
                             })
      .def_property_readonly("plots",
                             [](const Report& r) {
                               py::dict out;
                               for (const ReportPlot& p : r.plots()) out[py::str(p.name)] = p.svg;
                               return out;
                             })
      .def(
          "save_plots",
          [](const Report& r, const std::string& dir) {
            py::list paths;
            for (const ReportPlot& p : r.plots()) {
              const std::string path = dir + "/" + p.name;
              write_file_atomic(path, p.svg);
              paths.append(path);
            }
            return paths;
          },
          py::arg("dir"), "write every plot into the directory (which must exist), each atomically; returns the paths")
      .def("__str__", &Report::text)
      .def("_repr_markdown_", &Report::markdown)
      .def("__repr__", [](const Report& r) {
        return "<kvoracle.Report: " + std::to_string(r.tables().size()) + " tables, " +
               std::to_string(r.plots().size()) + " plots>";
      });
}

}  // namespace kvo::python
