//! The options the filter families' RESERVE and INSERT share, each value read with the error
//! RedisBloom gives for it: RESERVE's error rate, capacity and expansion (BF, CBF, TBF, FQ), and
//! INSERT parsed whole (BF, CBF), which each family only tells how to recognise its keywords.

use super::args::{float, int, int_in, parse_f64, within, Args, Items};
use super::errors::*;
use super::Ctx;
use crate::config::{CAPACITY_CEILING, MAX_CAPACITY, MAX_EXPANSION};
use crate::filter::{ChainOptions, CounterBits, CountingOptions};
use crate::protocol::Request;

/// The error_rate argument of a RESERVE: strictly between 0 and 1.
pub(super) fn reserve_error_rate(arg: &[u8]) -> Result<f64, CmdError> {
    let error_rate = float(arg, BF_BAD_ERROR_RATE)?;
    match error_rate > 0.0 && error_rate < 1.0 {
        true => Ok(error_rate),
        false => Err(BF_ERROR_RATE_RANGE.into()),
    }
}

/// The capacity argument of a RESERVE, at most `max` (`max_capacity`).
pub(super) fn reserve_capacity(arg: &[u8], max: u64) -> Result<u64, CmdError> {
    let capacity = int(arg, BF_BAD_CAPACITY)?;
    if capacity < 1 || capacity as u64 > max {
        return Err(match max {
            MAX_CAPACITY => BF_CAPACITY_RANGE.into(),
            max => bf_capacity_range(max),
        });
    }
    Ok(capacity as u64)
}

/// The value after a RESERVE's EXPANSION keyword.
pub(super) fn reserve_expansion(arg: &[u8]) -> Result<u32, CmdError> {
    let value = int(arg, BF_BAD_EXPANSION)?;
    Ok(within(value, 0..=i64::from(MAX_EXPANSION), BF_EXPANSION_RANGE)? as u32)
}

/// A RESERVE's growth factor from its EXPANSION and NONSCALING options; 0 is non-scaling.
pub(super) fn growth(expansion: Option<u32>, non_scaling: bool) -> Result<u32, CmdError> {
    if non_scaling && expansion.is_some_and(|e| e != 0) {
        return Err(BF_NONSCALING_EXPAND.into());
    }
    Ok(if non_scaling {
        0
    } else {
        expansion.unwrap_or(2)
    })
}

/// The largest capacity a RESERVE or INSERT may ask for: `bf-max-capacity`, except on replay,
/// which applies what was logged whatever the setting is now.
pub(super) fn max_capacity(ctx: &Ctx) -> u64 {
    match ctx.session.replaying {
        true => CAPACITY_CEILING,
        false => ctx.config().bf_max_capacity(),
    }
}

/// Whether an add creates a missing key, and with which options.
pub(super) enum Create<O> {
    /// With the `bf-*` defaults, read only if the key is missing.
    Defaults,
    With(O),
    /// A missing key is `ERR not found` (INSERT ... NOCREATE).
    Never,
}

/// An option of BF.INSERT and CBF.INSERT, once its keyword is recognised (each family matches
/// keywords its own way).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum InsertOption {
    Capacity,
    Error,
    Expansion,
    CounterBits,
    NoCreate,
    NonScaling,
    Items,
}

/// INSERT key [options] ITEMS item...: adds the items, creating a missing key with the options
/// given over the defaults, unless NOCREATE.
pub(super) struct Insert<'a, O> {
    pub(super) key: &'a [u8],
    pub(super) create: Create<O>,
    pub(super) items: Items<'a>,
}

impl<'a, O: InsertOptions> Insert<'a, O> {
    /// `options` are those of a key created without options, a capacity at most
    /// `max_capacity`; `keyword` recognises the options. Missing values and items are arity
    /// errors, an unknown word RedisBloom's `Unknown argument received`.
    pub(super) fn parse(
        request: Request<'a>,
        mut options: O,
        max_capacity: u64,
        keyword: fn(&[u8]) -> Option<InsertOption>,
    ) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let (mut no_create, mut non_scaling) = (false, false);
        loop {
            let word = args.required()?;
            match keyword(word).ok_or(BF_UNKNOWN_ARGUMENT)? {
                InsertOption::NoCreate => no_create = true,
                InsertOption::NonScaling => non_scaling = true,
                InsertOption::Items => break,
                option => options.set(option, args.required()?, max_capacity)?,
            }
        }
        let items = args.items();
        if items.is_empty() {
            return Err(args.arity_error());
        }
        if non_scaling {
            options.make_non_scaling();
        }
        let create = match no_create {
            true => Create::Never,
            false => Create::With(options),
        };
        Ok(Insert { key, create, items })
    }
}

/// The options INSERT may set on a filter it creates.
pub(super) trait InsertOptions: Copy {
    /// Capacity, error rate and expansion, which every filter type has.
    fn shape(&mut self) -> (&mut u64, &mut f64, &mut u32);

    /// NONSCALING: by default an expansion of 0.
    fn make_non_scaling(&mut self) {
        *self.shape().2 = 0;
    }

    /// An option only some filter types have; unknown by default.
    fn set_own(&mut self, _option: InsertOption, _value: &[u8]) -> CmdResult {
        Err(BF_UNKNOWN_ARGUMENT.into())
    }

    /// Sets an option that takes a value; a capacity of at most `max_capacity`. Each value has
    /// one error, whatever is wrong with it.
    fn set(&mut self, option: InsertOption, value: &[u8], max_capacity: u64) -> CmdResult {
        let (capacity, error_rate, expansion) = self.shape();
        match option {
            InsertOption::Capacity => {
                *capacity = int_in(value, 1..=max_capacity, BF_INSERT_BAD_CAPACITY)?;
            }
            InsertOption::Error => {
                *error_rate = parse_f64(value)
                    .filter(|rate| *rate > 0.0 && *rate < 1.0)
                    .ok_or(BF_INSERT_BAD_ERROR_RATE)?;
            }
            InsertOption::Expansion => {
                *expansion = int_in(value, 0..=MAX_EXPANSION, BF_INSERT_BAD_EXPANSION)?;
            }
            _ => return self.set_own(option, value),
        }
        Ok(())
    }
}

impl InsertOptions for ChainOptions {
    fn shape(&mut self) -> (&mut u64, &mut f64, &mut u32) {
        (
            &mut self.capacity,
            &mut self.error_rate,
            &mut self.expansion,
        )
    }

    /// The expansion stays, for RedisBloom's dump header.
    fn make_non_scaling(&mut self) {
        self.non_scaling = true;
    }
}

impl InsertOptions for CountingOptions {
    fn shape(&mut self) -> (&mut u64, &mut f64, &mut u32) {
        (
            &mut self.capacity,
            &mut self.error_rate,
            &mut self.expansion,
        )
    }

    fn set_own(&mut self, option: InsertOption, value: &[u8]) -> CmdResult {
        if option != InsertOption::CounterBits {
            return Err(BF_UNKNOWN_ARGUMENT.into());
        }
        self.counter_bits = int_in(value, 0..=u64::MAX, CBF_INSERT_BAD_COUNTER_BITS)
            .map(CounterBits::from_bits)?
            .ok_or(CBF_INSERT_BAD_COUNTER_BITS)?;
        Ok(())
    }
}
