// Store: trial metrics (see store.h). Values travel as JSON text ("NaN", "Infinity" and
// "-Infinity" included, which JSON numbers cannot carry) and are cast to DOUBLE PRECISION.
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "master/store/store.h"
#include "nlohmann/json.hpp"
#include "pqxx/pqxx"

namespace phalanx::master {
namespace {

// Rows $4 (JSON [{steps, name, value}]) of trial $1, group $2, run $3: their steps recorded once,
// their values stored or replaced; one row per value, `added` true for a new one.
constexpr char kAddMetrics[] = R"sql(
WITH new AS (
  SELECT * FROM json_to_recordset($4::JSON) AS x(steps BIGINT, name TEXT, value TEXT)),
steps AS (
  INSERT INTO trial_metric_steps (trial_id, grp, steps)
  SELECT DISTINCT $1::BIGINT, $2::SMALLINT, steps FROM new ON CONFLICT DO NOTHING)
INSERT INTO trial_metrics (trial_id, grp, steps, name, value, allocation_id)
SELECT $1, $2, steps, name, value::DOUBLE PRECISION, $3 FROM new
ON CONFLICT (trial_id, grp, steps, name) DO UPDATE
  SET value = EXCLUDED.value, allocation_id = EXCLUDED.allocation_id, reported_at = now()
RETURNING (xmax = 0) AS added
)sql";

// Adds $3 values to what trial $1 holds in group $2; the new total.
constexpr char kCountMetrics[] = R"sql(
INSERT INTO trial_metric_counts (trial_id, grp, n) VALUES ($1, $2, $3)
ON CONFLICT (trial_id, grp) DO UPDATE SET n = trial_metric_counts.n + EXCLUDED.n RETURNING n
)sql";

// A value as Postgres reads it back exactly.
std::string ValueText(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return absl::StrFormat("%.17g", v);
}

double ValueOf(const pqxx::field& f) {
  const std::string text = f.as<std::string>();
  if (text == "NaN") return std::nan("");
  if (text == "Infinity") return HUGE_VAL;
  if (text == "-Infinity") return -HUGE_VAL;
  return std::strtod(text.c_str(), nullptr);  // Subnormals included (std::stod throws on them).
}

}  // namespace

absl::Status Store::AddMetrics(int64_t trial_id, const std::string& allocation_id,
                               MetricGroup group, const std::vector<MetricReport>& reports,
                               int64_t max_values) {
  nlohmann::json rows = nlohmann::json::array();
  for (const MetricReport& r : reports) {
    for (const auto& [name, value] : r.metrics) {
      rows.push_back({{"steps", r.steps}, {"name", name}, {"value", ValueText(value)}});
    }
  }
  const int grp = static_cast<int>(group);
  return Transact([&](pqxx::transaction_base& tx) {
    int64_t added = 0;
    for (const pqxx::row& row :
         tx.exec_params(kAddMetrics, trial_id, grp, allocation_id, rows.dump())) {
      added += row[0].as<bool>() ? 1 : 0;
    }
    const int64_t held = tx.exec_params1(kCountMetrics, trial_id, grp, added)[0].as<int64_t>();
    if (held > max_values) {
      return absl::ResourceExhaustedError(absl::StrCat("trial ", trial_id, " would hold ", held,
                                                       " metric values in the group; a ",
                                                       "trial keeps at most ", max_values));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<MetricReport>> Store::GetMetrics(int64_t trial_id, MetricGroup group,
                                                            int64_t after_steps, int limit,
                                                            size_t max_values, bool* more) {
  std::vector<MetricReport> out;
  *more = false;
  absl::Status s = Read([&](pqxx::transaction_base& tx) {
    const pqxx::result rows = tx.exec_params(
        "WITH page AS (SELECT steps FROM trial_metric_steps WHERE trial_id = $1 AND grp = $2 "
        "AND steps > $3 ORDER BY steps LIMIT $4) "
        "SELECT m.steps, m.name, m.value::TEXT FROM trial_metrics m JOIN page USING (steps) "
        "WHERE m.trial_id = $1 AND m.grp = $2 ORDER BY m.steps, m.name",
        trial_id, static_cast<int>(group), after_steps, limit + 1);
    size_t values = 0;
    for (const pqxx::row& row : rows) {
      const int64_t steps = row[0].as<int64_t>();
      if (out.empty() || out.back().steps != steps) {
        if (static_cast<int>(out.size()) == limit || values >= max_values) {
          *more = true;
          break;
        }
        out.push_back({.steps = steps});
      }
      ++values;
      out.back().metrics.emplace_back(row[1].as<std::string>(), ValueOf(row[2]));
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::map<int64_t, double>> Store::BestValidation(const std::string& job_id,
                                                                const std::string& metric,
                                                                bool smaller_is_better) {
  std::map<int64_t, double> best;
  absl::Status s = Read([&](pqxx::transaction_base& tx) {
    const pqxx::result rows = tx.exec_params(
        absl::StrCat("SELECT m.trial_id, ", smaller_is_better ? "min" : "max",
                     "(m.value)::TEXT FROM trial_metrics m JOIN trials t ON t.id = m.trial_id "
                     "WHERE t.job_id = $1 AND m.grp = $2 AND m.name = $3 "
                     "AND m.value NOT IN ('NaN', 'Infinity', '-Infinity') GROUP BY m.trial_id"),
        job_id, static_cast<int>(MetricGroup::kValidation), metric);
    for (const pqxx::row& row : rows) best[row[0].as<int64_t>()] = ValueOf(row[1]);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return best;
}

}  // namespace phalanx::master
