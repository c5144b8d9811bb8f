//! One run measured by many processes: the shards of a run (`--shard I/N`, or the ranks an
//! MPI launcher started) each apply their part of the load and write their own results
//! file. Here is what ties them: [`shards`] starts their first window together and, under
//! [`mpi`], ends each level when every rank may end it (the profiler asks through
//! `load::ties`); [`merge`] puts their results files back together into the one run they
//! measured. Which part of the load a shard applies is its configuration
//! (`config::shard`).

pub mod merge;
pub mod mpi;
pub mod shards;
