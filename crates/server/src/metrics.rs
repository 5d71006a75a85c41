//! Prometheus metrics of the server and of a host: families built from
//! what the owner measured, encoded in the text exposition format by the
//! `prometheus` crate and served over HTTP by `tiny_http`.
//!
//! The owner (the tick loop, the supervisor's loop) calls
//! [`Endpoint::publish`] now and then (once a second); the HTTP thread only
//! hands out the last published text, an `Arc` taken under a lock held for a
//! pointer copy, so a scrape never delays a tick.
//!
//! - [`server`]: the families of one game server.
//! - [`host`]: the per-instance families of a host.

pub mod host;
pub mod server;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use prometheus::proto::{Counter, Gauge, LabelPair, Metric, MetricType, Quantile, Summary};
use prometheus::{Encoder, TextEncoder};

/// One family of samples (the `prometheus` crate's model).
pub use prometheus::proto::MetricFamily;

use crate::ServerError;

/// The kind of a family of plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

/// Label pairs of one sample, in the order they are written.
pub type Labels<'a> = &'a [(&'a str, &'a str)];

fn labelled(labels: Labels<'_>) -> Metric {
    let mut m = Metric::default();
    m.set_label(
        labels
            .iter()
            .map(|(k, v)| {
                let mut l = LabelPair::default();
                l.set_name((*k).to_string());
                l.set_value((*v).to_string());
                l
            })
            .collect(),
    );
    m
}

fn named(name: &str, help: &str, kind: MetricType, metrics: Vec<Metric>) -> MetricFamily {
    let mut f = MetricFamily::default();
    f.set_name(name.to_string());
    f.set_help(help.to_string());
    f.set_field_type(kind);
    f.set_metric(metrics);
    f
}

/// A family of counters or gauges, one sample per label set.
pub fn family<'a>(
    name: &str,
    help: &str,
    kind: Kind,
    samples: impl IntoIterator<Item = (Labels<'a>, f64)>,
) -> MetricFamily {
    let metrics = samples
        .into_iter()
        .map(|(labels, v)| {
            let mut m = labelled(labels);
            match kind {
                Kind::Counter => {
                    let mut c = Counter::default();
                    c.set_value(v);
                    m.set_counter(c);
                }
                Kind::Gauge => {
                    let mut g = Gauge::default();
                    g.set_value(v);
                    m.set_gauge(g);
                }
            }
            m
        })
        .collect();
    let t = match kind {
        Kind::Counter => MetricType::COUNTER,
        Kind::Gauge => MetricType::GAUGE,
    };
    named(name, help, t, metrics)
}

/// A family of one unlabelled value.
pub fn single(name: &str, help: &str, kind: Kind, value: f64) -> MetricFamily {
    family(name, help, kind, [(&[][..], value)])
}

/// A summary: `(quantile, value)` pairs, and the sum and count of what was
/// observed.
pub fn summary(
    name: &str,
    help: &str,
    quantiles: &[(f64, f64)],
    sum: f64,
    count: u64,
) -> MetricFamily {
    let mut s = Summary::default();
    s.set_quantile(
        quantiles
            .iter()
            .map(|&(q, v)| {
                let mut x = Quantile::default();
                x.set_quantile(q);
                x.set_value(v);
                x
            })
            .collect(),
    );
    s.set_sample_sum(sum);
    s.set_sample_count(count);
    let mut m = Metric::default();
    m.set_summary(s);
    named(name, help, MetricType::SUMMARY, vec![m])
}

/// The text exposition (format 0.0.4) of `families`; families without a
/// sample are left out (the format has no way to write them).
pub fn encode(families: &[MetricFamily]) -> String {
    let kept: Vec<MetricFamily> = families
        .iter()
        .filter(|f| !f.get_metric().is_empty())
        .cloned()
        .collect();
    let mut out = Vec::new();
    // Encoding only fails on empty families (left out above) or on a writer
    // error, which a Vec never returns.
    let _ = TextEncoder::new().encode(&kept, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// An HTTP endpoint serving the last published metrics on every path.
#[derive(Clone)]
pub struct Endpoint {
    text: Arc<Mutex<Arc<str>>>,
    addr: SocketAddr,
}

impl Endpoint {
    /// Listens on `addr` and serves from a thread named `metrics` (the HTTP
    /// server's own threads aside); empty until the first
    /// [`Endpoint::publish`].
    pub fn serve(addr: SocketAddr) -> Result<Self, ServerError> {
        let http = tiny_http::Server::http(addr).map_err(|e| ServerError::Metrics {
            addr,
            reason: e.to_string(),
        })?;
        let local = http.server_addr().to_ip().unwrap_or(addr);
        let text: Arc<Mutex<Arc<str>>> = Arc::new(Mutex::new(Arc::from("")));
        let shared = text.clone();
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                let content_type = tiny_http::Header::from_bytes(
                    &b"Content-Type"[..],
                    &b"text/plain; version=0.0.4"[..],
                )
                .expect("a valid header");
                for req in http.incoming_requests() {
                    let body = shared.lock().map(|t| t.clone()).unwrap_or_default();
                    let resp =
                        tiny_http::Response::from_string(&*body).with_header(content_type.clone());
                    let _ = req.respond(resp);
                }
            })
            .map_err(|e| ServerError::Metrics {
                addr,
                reason: format!("cannot start the metrics thread: {e}"),
            })?;
        Ok(Self { text, addr: local })
    }

    /// The address it listens on (the port picked when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replaces what the endpoint serves; encoding happens here, on the
    /// caller's thread, and the lock is held for a pointer swap only.
    pub fn publish(&self, families: &[MetricFamily]) {
        let text: Arc<str> = Arc::from(encode(families));
        if let Ok(mut t) = self.text.lock() {
            *t = text;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_encode_in_the_text_format_with_labels_in_order() {
        let text = encode(&[
            single("tp_ticks_total", "Ticks run.", Kind::Counter, 42.0),
            family(
                "tp_up",
                "Up.",
                Kind::Gauge,
                [
                    (&[("host", "e1"), ("instance", "0")][..], 1.0),
                    (&[("host", "e1"), ("instance", "1")][..], 0.0),
                ],
            ),
            family("tp_empty", "Nothing yet.", Kind::Gauge, []),
            summary(
                "tp_frame_seconds",
                "Frame.",
                &[(0.5, 0.001), (0.99, 0.002), (1.0, 0.25)],
                1.5,
                3,
            ),
        ]);
        assert_eq!(
            text,
            "# HELP tp_ticks_total Ticks run.\n# TYPE tp_ticks_total counter\ntp_ticks_total 42\n\
             # HELP tp_up Up.\n# TYPE tp_up gauge\n\
             tp_up{host=\"e1\",instance=\"0\"} 1\ntp_up{host=\"e1\",instance=\"1\"} 0\n\
             # HELP tp_frame_seconds Frame.\n# TYPE tp_frame_seconds summary\n\
             tp_frame_seconds{quantile=\"0.5\"} 0.001\ntp_frame_seconds{quantile=\"0.99\"} 0.002\n\
             tp_frame_seconds{quantile=\"1\"} 0.25\n\
             tp_frame_seconds_sum 1.5\ntp_frame_seconds_count 3\n"
        );
    }

    #[test]
    fn the_endpoint_serves_the_last_published_text() {
        use std::io::{Read, Write};
        let ep = Endpoint::serve("127.0.0.1:0".parse().unwrap()).unwrap();
        let get = || {
            let mut s = std::net::TcpStream::connect(ep.local_addr()).unwrap();
            s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
            let mut body = String::new();
            s.read_to_string(&mut body).unwrap();
            body
        };
        ep.publish(&[single("tp_a", "A.", Kind::Gauge, 1.0)]);
        ep.publish(&[single("tp_b", "B.", Kind::Gauge, 2.0)]);
        let body = get();
        assert!(
            body.starts_with("HTTP/1.0 200") || body.starts_with("HTTP/1.1 200"),
            "{body}"
        );
        assert!(body.contains("text/plain; version=0.0.4"), "{body}");
        assert!(
            body.ends_with("# HELP tp_b B.\n# TYPE tp_b gauge\ntp_b 2\n"),
            "{body}"
        );
    }
}
