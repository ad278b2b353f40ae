pub mod bench;
pub mod demo;
pub mod gen;
pub mod import;
pub mod info;
pub mod sim;
