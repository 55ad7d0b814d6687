//! Instant-vector evaluation of the PromQL the alerts use, so that a test can show an alert's
//! expression firing on one set of samples and staying quiet on another: selectors with `=`
//! matchers, number literals, `time()`, `max`/`min`/`sum` [`by (...)`], arithmetic,
//! comparisons (filtering), `and`/`or`/`unless`, with `on (...)` matching. Anything else panics
//! naming what is missing, so that an alert written beyond it cannot pass untested.

use std::collections::BTreeMap;

use promql_parser::label::MatchOp;
use promql_parser::parser::{self, Expr, LabelModifier};

pub type Labels = BTreeMap<String, String>;

/// A sample: metric name, labels, value.
pub struct Series<'a>(pub &'a str, pub &'a [(&'a str, &'a str)], pub f64);

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Scalar(f64),
    Vector(Vec<(Labels, f64)>),
}

/// `expr` at time `now` (Unix seconds) over `series`: the vector an alert fires for (one
/// element per alert), or a scalar.
pub fn eval(expr: &str, series: &[Series<'_>], now: f64) -> Value {
    let ast = parser::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    eval_expr(&ast, series, now)
}

fn eval_expr(e: &Expr, series: &[Series<'_>], now: f64) -> Value {
    match e {
        Expr::NumberLiteral(n) => Value::Scalar(n.val),
        Expr::Paren(p) => eval_expr(&p.expr, series, now),
        Expr::Call(c) if c.func.name == "time" => Value::Scalar(now),
        Expr::VectorSelector(v) => {
            let name = v.name.as_deref().expect("a metric name");
            for m in &v.matchers.matchers {
                assert!(
                    matches!(m.op, MatchOp::Equal),
                    "matcher {m:?}: only = is evaluated"
                );
            }
            Value::Vector(
                series
                    .iter()
                    .filter(|s| s.0 == name)
                    .filter(|s| {
                        v.matchers.matchers.iter().all(|m| {
                            m.name == "__name__"
                                || s.1.iter().any(|(k, val)| *k == m.name && *val == m.value)
                        })
                    })
                    .map(|s| {
                        let labels = s.1.iter().map(|(k, v)| (k.to_string(), v.to_string()));
                        (labels.collect(), s.2)
                    })
                    .collect(),
            )
        }
        Expr::Aggregate(a) => {
            let Value::Vector(v) = eval_expr(&a.expr, series, now) else {
                panic!("aggregation of a scalar");
            };
            let keep: Vec<String> = match &a.modifier {
                Some(LabelModifier::Include(l)) => l.labels.clone(),
                None => Vec::new(),
                Some(m) => panic!("aggregation modifier {m:?}: only by (...) is evaluated"),
            };
            let op = a.op.to_string();
            let mut groups: BTreeMap<Labels, f64> = BTreeMap::new();
            for (labels, x) in v {
                let key = project(&labels, &keep);
                let acc = groups.entry(key).or_insert(match op.as_str() {
                    "max" => f64::NEG_INFINITY,
                    "min" => f64::INFINITY,
                    "sum" => 0.0,
                    o => panic!("aggregation {o}: not evaluated"),
                });
                *acc = match op.as_str() {
                    "max" => acc.max(x),
                    "min" => acc.min(x),
                    _ => *acc + x,
                };
            }
            Value::Vector(groups.into_iter().collect())
        }
        Expr::Binary(b) => {
            let op = b.op.to_string();
            let m = b.modifier.as_ref();
            assert!(!m.is_some_and(|m| m.return_bool), "bool: not evaluated");
            let on: Option<Vec<String>> = match m.and_then(|m| m.matching.as_ref()) {
                None => None,
                Some(LabelModifier::Include(l)) => Some(l.labels.clone()),
                Some(x) => panic!("{x:?}: only on (...) is evaluated"),
            };
            let lhs = eval_expr(&b.lhs, series, now);
            let rhs = eval_expr(&b.rhs, series, now);
            binary(&op, lhs, rhs, on.as_deref())
        }
        other => panic!("not evaluated here: {other:?}"),
    }
}

fn project(labels: &Labels, keep: &[String]) -> Labels {
    labels
        .iter()
        .filter(|(k, _)| keep.contains(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Some(result) of an arithmetic operator, or Some(lhs)/None for a comparison (keep/drop).
fn apply(op: &str, l: f64, r: f64) -> Option<f64> {
    let cmp = |keep: bool| keep.then_some(l);
    match op {
        "+" => Some(l + r),
        "-" => Some(l - r),
        "*" => Some(l * r),
        "/" => Some(l / r),
        ">" => cmp(l > r),
        "<" => cmp(l < r),
        ">=" => cmp(l >= r),
        "<=" => cmp(l <= r),
        "==" => cmp(l == r),
        "!=" => cmp(l != r),
        o => panic!("operator {o}: not evaluated"),
    }
}

fn binary(op: &str, lhs: Value, rhs: Value, on: Option<&[String]>) -> Value {
    let is_cmp = matches!(op, ">" | "<" | ">=" | "<=" | "==" | "!=");
    match (lhs, rhs) {
        (Value::Scalar(l), Value::Scalar(r)) => {
            assert!(!is_cmp, "scalar comparison without bool");
            Value::Scalar(apply(op, l, r).unwrap())
        }
        (Value::Vector(v), Value::Scalar(r)) => Value::Vector(
            v.into_iter()
                .filter_map(|(l, x)| apply(op, x, r).map(|y| (l, y)))
                .collect(),
        ),
        (Value::Scalar(l), Value::Vector(v)) => Value::Vector(
            v.into_iter()
                .filter_map(|(lab, x)| {
                    // A comparison keeps the vector's sample.
                    let y = apply(op, l, x)?;
                    Some((lab, if is_cmp { x } else { y }))
                })
                .collect(),
        ),
        (Value::Vector(l), Value::Vector(r)) => {
            let key = |labels: &Labels| match on {
                Some(keep) => project(labels, keep),
                None => labels.clone(),
            };
            let right: BTreeMap<Labels, f64> = r.iter().map(|(k, x)| (key(k), *x)).collect();
            Value::Vector(match op {
                "and" => l
                    .into_iter()
                    .filter(|(k, _)| right.contains_key(&key(k)))
                    .collect(),
                "unless" => l
                    .into_iter()
                    .filter(|(k, _)| !right.contains_key(&key(k)))
                    .collect(),
                "or" => {
                    let left: Vec<Labels> = l.iter().map(|(k, _)| key(k)).collect();
                    let mut out = l;
                    out.extend(r.into_iter().filter(|(k, _)| !left.contains(&key(k))));
                    out
                }
                _ => l
                    .into_iter()
                    .filter_map(|(k, x)| {
                        let y = apply(op, x, *right.get(&key(&k))?)?;
                        Some((if on.is_some() && !is_cmp { key(&k) } else { k }, y))
                    })
                    .collect(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &[(&str, &str)] = &[("namespace", "n"), ("schedule", "s")];
    const T: &[(&str, &str)] = &[("namespace", "n"), ("schedule", "t")];

    fn names(v: Value) -> Vec<(String, f64)> {
        let Value::Vector(v) = v else { panic!("{v:?}") };
        v.into_iter()
            .map(|(l, x)| (l["schedule"].clone(), x))
            .collect()
    }

    #[test]
    fn evaluates_what_the_alerts_use() {
        let series = [
            Series("a", S, 5.0),
            Series("a", T, 1.0),
            Series("b", S, 2.0),
        ];
        assert_eq!(names(eval("a > 2", &series, 0.0)), [("s".into(), 5.0)]);
        assert_eq!(names(eval("3 < a", &series, 0.0)), [("s".into(), 5.0)]);
        assert_eq!(
            names(eval("time() - a > 2 * b", &series, 10.0)),
            [("s".into(), 5.0)],
            "10 - 5 > 4; t has no b"
        );
        assert_eq!(names(eval("time() - a > 2 * b", &series, 8.0)), []);
        assert_eq!(
            names(eval(
                "max by (namespace, schedule) (a) and on (schedule) b",
                &series,
                0.0
            )),
            [("s".into(), 5.0)]
        );
        assert_eq!(
            names(eval("b or a", &series, 0.0)),
            [("s".into(), 2.0), ("t".into(), 1.0)]
        );
        assert_eq!(names(eval("a unless b", &series, 0.0)), [("t".into(), 1.0)]);
        let Value::Vector(v) = eval("sum(a)", &series, 0.0) else {
            panic!()
        };
        assert_eq!(v, [(Labels::new(), 6.0)]);
    }
}
