//! The operating system beneath everything else: processes, descriptors,
//! CPUs. With `shm`, the only place `unsafe` system calls are written.

pub mod process;
