"""The offline (nested-eviction) problem as a MILP for HiGHS (highspy), the generic-solver peer
of kvoracle's min-cost-flow oracle: x[i, j] in {0, 1} for j <= i (token j cached after step i),
x[i, j] <= x[i-1, j] (no re-entry), sum_j x[i, j] <= k, maximise sum w[i, j] x[i, j]."""

import highspy
import numpy as np


def solve_milp(w, k):
    n = w.shape[0]
    var = {}
    for i in range(n):
        for j in range(i + 1):
            var[(i, j)] = len(var)
    nv = len(var)
    cost = np.array([-w[i, j] for (i, j) in var])
    rows_start, rows_index, rows_value, lower, upper = [0], [], [], [], []
    for i in range(1, n):  # nesting: x[i, j] - x[i-1, j] <= 0
        for j in range(i):
            rows_index += [var[(i, j)], var[(i - 1, j)]]
            rows_value += [1.0, -1.0]
            rows_start.append(len(rows_index))
            lower.append(-highspy.kHighsInf)
            upper.append(0.0)
    for i in range(n):  # capacity
        for j in range(i + 1):
            rows_index.append(var[(i, j)])
            rows_value.append(1.0)
        rows_start.append(len(rows_index))
        lower.append(-highspy.kHighsInf)
        upper.append(float(k))
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    lp = highspy.HighsLp()
    lp.num_col_ = nv
    lp.num_row_ = len(lower)
    lp.col_cost_ = cost
    lp.col_lower_ = np.zeros(nv)
    lp.col_upper_ = np.ones(nv)
    lp.row_lower_ = np.array(lower)
    lp.row_upper_ = np.array(upper)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.array(rows_start, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(rows_index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(rows_value)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * nv
    h.passModel(lp)
    h.run()
    return -h.getInfo().objective_function_value
