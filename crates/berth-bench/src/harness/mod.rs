//! What the benchmarks share: the `berth server` child process they start
//! ([`server`]), their HTTPS client of it ([`client`]), what they read of a
//! process from `/proc` ([`process`]) and the objects they load
//! ([`objects`]). Each benchmark's own logic stays in its file.

pub mod client;
pub mod objects;
pub mod process;
pub mod server;

pub(crate) use client::{Client, Protocol, Target};
pub(crate) use objects::node_json;
pub(crate) use process::{Memory, cpu_seconds, memory_of};
pub(crate) use server::{
    API_SERVER_ONLY, ServerProcess, bench_runtime, berth_binary, data_parent, ready_target,
    start_server_with,
};
