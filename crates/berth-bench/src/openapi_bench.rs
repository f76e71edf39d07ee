//! `berth-bench openapi`: what the OpenAPI documents cost. The server
//! builds them once, lazily, at the first `/openapi/...` request (so
//! start-up pays nothing); this times that build and reports the size of
//! each document as served.

use std::collections::BTreeMap;

use clap::Args;
use serde::Serialize;

use crate::measure::{Machine, Timing, time};

#[derive(Debug, Args)]
pub struct OpenapiArgs {
    /// Timed samples.
    #[arg(long, default_value_t = 11)]
    samples: usize,
}

#[derive(Debug, Serialize)]
pub struct OpenapiReport {
    machine: Machine,
    /// Building every document (v2 JSON and protobuf, v3 index and each
    /// group-version), as the first request does.
    build: Timing,
    /// Bytes of each document.
    sizes: BTreeMap<String, usize>,
}

pub fn run(args: &OpenapiArgs) -> OpenapiReport {
    let sizes = berth_apiserver::openapi::build_uncached()
        .into_iter()
        .collect();
    OpenapiReport {
        machine: Machine::describe(),
        build: time(
            "build all documents",
            args.samples,
            berth_apiserver::openapi::build_uncached,
        ),
        sizes,
    }
}
