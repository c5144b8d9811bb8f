//! Load drivers: how requests are put in flight. The closed loop keeps exactly N requests
//! outstanding; each in-flight slot is a task with its own connection.

pub mod concurrency;
