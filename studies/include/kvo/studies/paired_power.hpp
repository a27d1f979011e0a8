// How many paired instances a comparison of two rows needs: the exact two-sided sign test
// (McNemar's exact test when scores are 0 or 1) and its power against a difference in accuracy,
// so that a study is sized before it runs (kvoracle tasks power) and judged after.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "kvo/core/field_schema.hpp"
#include "kvo/report/report.hpp"

namespace kvo::studies {

// Exact two-sided sign test on paired scores: `better` and `worse` instances where one row scores
// above or below the other (ties dropped). p = min(1, 2 P(X <= min(better, worse))), X ~ Bin(n, 1/2).
double sign_test_p(int better, int worse);

// The model behind the power: each instance is discordant (the rows score differently) with
// probability `discordance`, and a discordant one favours the first row with probability
// (discordance + difference) / (2 discordance), so the rows' accuracies differ by `difference`
// (for 0/1 scores; for graded scores it is P(first above) - P(first below)). The power is the
// probability that sign_test_p(better, worse) < alpha on `instances` pairs. kvo::Error for a
// discordance below the difference or outside (0, 1], a difference outside (0, 1], alpha outside
// (0, 1) or instances below 1.
double sign_test_power(int instances, double discordance, double difference, double alpha);
// The smallest number of instances whose power reaches `power` (0 when none up to max_instances does).
int instances_for_power(double discordance, double difference, double alpha, double power, int max_instances);

struct PairedPowerRequest {
  double difference = 0.1;  // the difference in accuracy the study must detect
  double alpha = 0.01;      // two-sided significance level (p < alpha)
  double power = 0.8;       // the probability of detecting it where it exists
  // Shares of the instances on which the two rows score differently, one line of the answer each
  // (a pilot run's report shows the share each comparison saw).
  std::vector<double> discordance = {0.1, 0.15, 0.2, 0.3, 0.4, 0.5};
  int instances = 0;  // > 0: also the power a study of this size has at each discordance
  int max_instances = 5000;
  // kvo::Error naming the field: a difference outside (0, 1], alpha outside (0, 0.5], power
  // outside (0, 1), no discordance, one below the difference or above 1, instances below 0,
  // max_instances below 1.
  void validate() const;
  static const Schema<PairedPowerRequest>& schema();
};

struct PairedPowerRow {
  double discordance = 0.0;
  int instances = 0;            // needed; 0: more than max_instances
  double power_reached = 0.0;   // at that size
  double power_at_size = -1.0;  // at request.instances (-1 when not asked)
};

struct PairedPowerResult {
  PairedPowerRequest request;
  std::vector<PairedPowerRow> rows;  // in the request's discordance order
  nlohmann::json to_json() const;
  Report report() const;
};

PairedPowerResult paired_power(const PairedPowerRequest& request);

}  // namespace kvo::studies
