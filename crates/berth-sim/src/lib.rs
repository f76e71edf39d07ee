//! berth sim: rehearse a failure. A whole cluster (API server on an
//! in-memory store, scheduler, controllers, simulated nodes) runs a
//! scenario on a virtual clock and writes what happened.
//!
//! - [`scenario`]: the YAML file, checked, every error with its line;
//! - [`run`]: the cluster on a paused clock, steps at their times;
//! - [`components`]: the seam where the scheduler and controllers plug in;
//! - [`fleet`]: the nodes, berth-agent's simulated fleet in-process;
//! - [`timeline`]: entries derived from object changes, JSON lines;
//! - [`report`]: one self-contained HTML page of the run.
pub mod components;
pub mod config;
pub mod fleet;
/// Go `time.Duration` strings (the scenario file and every duration flag).
pub use berth_core::duration;
mod recorder;
pub mod report;
pub mod run;
pub mod scenario;
pub mod timeline;
