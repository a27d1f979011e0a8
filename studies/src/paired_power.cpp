#include "kvo/studies/paired_power.hpp"

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>
#include <cmath>
#include <tuple>
#include <utility>

#include "kvo/core/error.hpp"

namespace kvo::studies {
namespace {

using boost::math::binomial_distribution;

void check_model(double discordance, double difference, double alpha) {
  require(difference > 0.0 && difference <= 1.0,
          "paired power: difference " + fmt(difference, 4) + " is outside (0, 1]");
  require(alpha > 0.0 && alpha < 1.0, "paired power: alpha " + fmt(alpha, 4) + " is outside (0, 1)");
  require(discordance <= 1.0 && discordance >= difference - 1e-12,
          "paired power: discordance " + fmt(discordance, 4) + " is outside [difference " + fmt(difference, 4) +
              ", 1]: two rows that differ by the difference disagree on at least that share of instances");
}

// The sign test's rejection region on d discordant pairs: min(better, worse) <= c rejects (-1:
// none). c grows by at most one with d, so it is searched from the previous d's.
int critical_count(int d, int previous, double alpha) {
  if (d == 0) return -1;
  const binomial_distribution<double> half(d, 0.5);
  int c = std::max(-1, previous);
  while (c + 1 <= d / 2 && 2.0 * boost::math::cdf(half, c + 1) < alpha) ++c;
  return c;
}

// P(reject | d discordant pairs with rejection region c), the first row favoured with probability q.
double reject_given(int d, int c, double q) {
  if (c < 0) return 0.0;
  const binomial_distribution<double> favour(d, q);
  const double low = boost::math::cdf(favour, c);
  const double high = boost::math::cdf(boost::math::complement(favour, d - c - 1));
  return std::min(1.0, low + high);
}

// Power at every size up to max_n, sharing P(reject | d) between sizes.
class PowerCurve {
 public:
  PowerCurve(double discordance, double difference, double alpha)
      : psi_(discordance), q_(std::min(1.0, (discordance + difference) / (2.0 * discordance))), alpha_(alpha) {}

  double at(int n) {
    while (static_cast<int>(given_.size()) <= n) {
      const int d = static_cast<int>(given_.size());
      critical_ = critical_count(d, critical_, alpha_);
      given_.push_back(reject_given(d, critical_, q_));
    }
    if (psi_ >= 1.0) return given_[n];
    // The discordant count's pmf from its mode outwards by the ratio of neighbouring terms, to
    // 12 standard deviations (the mass beyond is below 1e-30).
    const int mode = std::min(n, static_cast<int>(std::floor((n + 1) * psi_)));
    const double sd = std::sqrt(n * psi_ * (1.0 - psi_));
    const int reach = static_cast<int>(std::ceil(12.0 * sd)) + 1;
    const double odds = psi_ / (1.0 - psi_), at_mode = boost::math::pdf(binomial_distribution<double>(n, psi_), mode);
    double p = at_mode * given_[mode], term = at_mode;
    for (int d = mode; d < n && d < mode + reach; ++d) {
      term *= odds * (n - d) / (d + 1.0);
      p += term * given_[d + 1];
    }
    term = at_mode;
    for (int d = mode; d > 0 && d > mode - reach; --d) {
      term *= (d / (odds * (n - d + 1.0)));
      p += term * given_[d - 1];
    }
    return std::min(1.0, p);
  }

  // The smallest size up to max_n whose power reaches `power`, with that power; (0, 0) when none does.
  std::pair<int, double> first_reaching(double power, int max_n) {
    for (int n = 1; n <= max_n; ++n)
      if (const double p = at(n); p >= power) return {n, p};
    return {0, 0.0};
  }

 private:
  double psi_, q_, alpha_;
  int critical_ = -1;
  std::vector<double> given_;
};

std::string share(double x) { return fmt(x, 3); }

}  // namespace

double sign_test_p(int better, int worse) {
  require(better >= 0 && worse >= 0, "sign test: negative counts");
  const int n = better + worse;
  if (n == 0) return 1.0;
  const binomial_distribution<double> half(n, 0.5);
  return std::min(1.0, 2.0 * boost::math::cdf(half, std::min(better, worse)));
}

double sign_test_power(int instances, double discordance, double difference, double alpha) {
  check_model(discordance, difference, alpha);
  require(instances >= 1, "paired power: instances " + std::to_string(instances) + " is below 1");
  return PowerCurve(discordance, difference, alpha).at(instances);
}

int instances_for_power(double discordance, double difference, double alpha, double power, int max_instances) {
  check_model(discordance, difference, alpha);
  require(power > 0.0 && power < 1.0, "paired power: power " + fmt(power, 4) + " is outside (0, 1)");
  PowerCurve curve(discordance, difference, alpha);
  return curve.first_reaching(power, max_instances).first;
}

void PairedPowerRequest::validate() const {
  require(difference > 0.0 && difference <= 1.0, "difference: " + fmt(difference, 4) + " is outside (0, 1]");
  require(alpha > 0.0 && alpha <= 0.5, "alpha: " + fmt(alpha, 4) + " is outside (0, 0.5]");
  require(power > 0.0 && power < 1.0, "power: " + fmt(power, 4) + " is outside (0, 1)");
  require(!discordance.empty(), "discordance: no value");
  for (double d : discordance)
    require(d >= difference - 1e-12 && d <= 1.0,
            "discordance: " + fmt(d, 4) + " is outside [difference, 1] (two rows that differ by " + fmt(difference, 4) +
                " disagree on at least that share of instances)");
  require(instances >= 0, "instances: " + std::to_string(instances) + " is below 0");
  require(max_instances >= 1, "max_instances: " + std::to_string(max_instances) + " is below 1");
}

const Schema<PairedPowerRequest>& PairedPowerRequest::schema() {
  using R = PairedPowerRequest;
  static const Schema<R> schema(
      "paired power request",
      fields<R>({{member(&R::difference, {.name = "difference", .help = "the difference in accuracy to detect"}),
                  member(&R::alpha, {.name = "alpha", .help = "two-sided significance level (p < alpha)"}),
                  member(&R::power, {.name = "power", .help = "the probability of detecting the difference"}),
                  member(&R::discordance,
                         {.name = "discordance",
                          .help = "shares of instances on which the two rows score differently, comma-separated"}),
                  member(&R::instances,
                         {.name = "instances", .help = "also the power of a study of this many instances (0: no)"}),
                  member(&R::max_instances, {.name = "max_instances", .help = "the largest size searched"})}}));
  return schema;
}

PairedPowerResult paired_power(const PairedPowerRequest& req) {
  req.validate();
  PairedPowerResult out;
  out.request = req;
  for (double d : req.discordance) {
    PowerCurve curve(std::max(d, req.difference), req.difference, req.alpha);
    PairedPowerRow row;
    row.discordance = d;
    std::tie(row.instances, row.power_reached) = curve.first_reaching(req.power, req.max_instances);
    if (req.instances > 0) row.power_at_size = curve.at(req.instances);
    out.rows.push_back(row);
  }
  return out;
}

nlohmann::json PairedPowerResult::to_json() const {
  nlohmann::json rows_json = nlohmann::json::array();
  for (const PairedPowerRow& r : rows) {
    nlohmann::json j = {{"discordance", r.discordance}, {"instances", r.instances}, {"power_reached", r.power_reached}};
    if (r.power_at_size >= 0) j["power_at_size"] = r.power_at_size;
    rows_json.push_back(j);
  }
  return {{"request", PairedPowerRequest::schema().to_json(request)}, {"rows", rows_json}};
}

Report PairedPowerResult::report() const {
  Report rep;
  rep.line("Instances a paired comparison of two rows needs to find a difference of " + share(request.difference) +
           " in accuracy significant (exact two-sided sign test, p < " + fmt(request.alpha, 4) + ") with power " +
           share(request.power) + ", by the share of instances on which the two rows disagree:");
  std::vector<std::string> head = {"discordance", "instances", "power reached"};
  if (request.instances > 0) head.push_back("power at " + std::to_string(request.instances));
  Table& t = rep.table(head);
  for (const PairedPowerRow& r : rows) {
    std::vector<Cell> cells = {
        decimal(r.discordance, 3),
        r.instances > 0 ? integer(r.instances) : Cell("> " + std::to_string(request.max_instances)),
        r.instances > 0 ? decimal(r.power_reached, 3) : Cell("-")};
    if (request.instances > 0) cells.push_back(decimal(r.power_at_size, 3));
    t.row(cells);
  }
  return rep;
}

}  // namespace kvo::studies
