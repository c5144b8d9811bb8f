//! `inferperf compare`'s model and its console text: the comparison of results files
//! ([`model`]) and the table it prints ([`text`]). The page is `report::html`'s; the
//! command that reads the files, prints and exits is `commands::compare`.

pub mod model;
pub mod run_to_run;
pub mod text;
pub mod validity;

pub use model::*;
