//! A default in the two forms it is shown in: as help and the reference
//! print it (`Shown`: `10s`, `4MiB`, `auto`) and as a profile writes it
//! (`AsField`: the field's own type, so `init --full` and the summary's
//! `config` go through the profile's serializer).

use std::net::SocketAddr;
use std::time::Duration;

use crate::choice::Choice;
use crate::config::bytes::format_bytes;
use crate::config::duration::format_duration;
use crate::config::profile::{HumanBytes, HumanDuration};
use crate::dataset::Order;
use crate::plan::ServerMetrics;

/// A default as help text shows it.
pub(crate) trait Shown {
    fn shown(&self) -> String;
}

impl Shown for Duration {
    fn shown(&self) -> String {
        format_duration(*self)
    }
}

impl Shown for HumanBytes {
    fn shown(&self) -> String {
        format_bytes(self.0)
    }
}

impl<C: Choice> Shown for C {
    fn shown(&self) -> String {
        self.name().to_string()
    }
}

impl Shown for Order {
    fn shown(&self) -> String {
        self.to_string()
    }
}

impl Shown for ServerMetrics {
    fn shown(&self) -> String {
        self.name().to_string()
    }
}

macro_rules! shown_as_text {
    ($($t:ty),*) => {
        $(impl Shown for $t {
            fn shown(&self) -> String {
                self.to_string()
            }
        })*
    };
}

shown_as_text!(&str, bool, u16, u32, u64, usize, f64, SocketAddr);

/// A typed default as the profile field of type `T` writes it.
pub(crate) trait AsField<T> {
    fn as_field(&self) -> T;
}

impl<T: Clone> AsField<T> for T {
    fn as_field(&self) -> T {
        self.clone()
    }
}

impl AsField<HumanDuration> for Duration {
    fn as_field(&self) -> HumanDuration {
        HumanDuration(*self)
    }
}

impl AsField<String> for &str {
    fn as_field(&self) -> String {
        self.to_string()
    }
}

impl<C: Choice> AsField<String> for C {
    fn as_field(&self) -> String {
        self.name().to_string()
    }
}

impl AsField<String> for Order {
    fn as_field(&self) -> String {
        self.to_string()
    }
}

impl AsField<String> for ServerMetrics {
    fn as_field(&self) -> String {
        self.name().to_string()
    }
}
