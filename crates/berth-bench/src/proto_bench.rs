//! `berth-bench proto`: the cost of Kubernetes protobuf for one object, which the API server
//! pays on every protobuf request and response: berth-proto's encode (JSON value → `k8s\x00`
//! envelope) and decode of a realistic Pod (berth-proto's test Pod: containers, probes,
//! affinity, tolerations, managed fields, statuses), a watch frame of it, and for scale the
//! same Pod written and read as JSON with serde_json.

use clap::Args;
use serde::Serialize;
use serde_json::Value;

use crate::measure::{Machine, Timing, time};

#[derive(Debug, Args)]
pub struct ProtoArgs {
    /// Timed samples per measurement.
    #[arg(long, default_value_t = 21)]
    samples: usize,
}

#[derive(Debug, Serialize)]
pub struct ProtoReport {
    bench: &'static str,
    machine: Machine,
    /// The Pod's size as compact JSON and as a protobuf body.
    json_bytes: usize,
    protobuf_bytes: usize,
    timings: Vec<Timing>,
}

const POD: &str = include_str!("../../berth-proto/tests/data/pod.json");

pub fn run(args: &ProtoArgs) -> anyhow::Result<ProtoReport> {
    let pod: Value = serde_json::from_str(POD)?;
    let json = serde_json::to_vec(&pod)?;
    let protobuf = berth_proto::encode_object(&pod)?;
    anyhow::ensure!(
        berth_proto::decode_object(&protobuf)? == pod,
        "the Pod does not round trip"
    );
    let mut buf = Vec::with_capacity(protobuf.len() * 2);
    let timings = vec![
        time("protobuf/encode_object", args.samples, || {
            berth_proto::encode_object(&pod).map(|bytes| bytes.len())
        }),
        time(
            "protobuf/encode_object into a reused buffer",
            args.samples,
            || {
                buf.clear();
                berth_proto::envelope::encode_object_into(&mut buf, &pod).map(|()| buf.len())
            },
        ),
        time("protobuf/decode_object", args.samples, || {
            berth_proto::decode_object(&protobuf)
        }),
        time("protobuf/watch encode_event", args.samples, || {
            berth_proto::watch::encode_event("MODIFIED", &pod)
        }),
        time("json/serde_json::to_vec", args.samples, || {
            serde_json::to_vec(&pod).map(|bytes| bytes.len())
        }),
        time("json/serde_json::from_slice", args.samples, || {
            serde_json::from_slice::<Value>(&json)
        }),
    ];
    Ok(ProtoReport {
        bench: "proto",
        machine: Machine::describe(),
        json_bytes: json.len(),
        protobuf_bytes: protobuf.len(),
        timings,
    })
}
