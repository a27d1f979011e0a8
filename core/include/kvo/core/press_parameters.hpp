// The one declaration of kvpress's press parameters (window_size, n_sink, seed, ...): each has its
// kvpress keyword, the CLI's flag and a help line. The CLI's flags, the Python keywords and the
// JSON form of a press request all come from press_parameters_schema(), so they cannot disagree.
#pragma once
#include "kvo/core/field_schema.hpp"
#include "kvo/core/press.hpp"

namespace kvo {

// Names are kvpress's keywords; the CLI's flags are derived from them ("--window-size"), but for
// seed ("--press-seed", apart from the policies' --seed). The JSON form is every parameter by name.
const Schema<PressOptions>& press_parameters_schema();

}  // namespace kvo
