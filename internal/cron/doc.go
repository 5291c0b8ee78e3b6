// Package cron parses anarchon's cron dialect and computes the instants at
// which an expression fires in a given time zone.
//
// # Fields
//
// An expression has five fields, or six with a leading seconds field,
// separated by spaces or tabs:
//
//	[second] minute hour day-of-month month day-of-week
//
// The allowed values are:
//
//	second        0-59
//	minute        0-59
//	hour          0-23
//	day-of-month  1-31
//	month         1-12 or JAN-DEC
//	day-of-week   0-7 or SUN-SAT (0 and 7 are both Sunday)
//
// Names are case-insensitive and are accepted wherever a number is, including
// in ranges (MON-FRI, JAN-MAR). A five-field expression fires at second 0.
//
// Each field is a comma-separated list of terms. A term is one of:
//
//	term    meaning
//	*       every value of the field
//	v       a single value
//	a-b     the values from a to b inclusive
//	*/n     every n-th value, starting at the field's minimum
//	a-b/n   every n-th value from a to b
//	a/n     every n-th value from a to the field's maximum
//
// A range whose start is greater than its end wraps around: 22-2 in the hour
// field means 22,23,0,1,2 and FRI-MON means Friday, Saturday, Sunday and
// Monday. A step applied to a wrapping range counts along the wrapped
// sequence, so 22-4/2 means 22,0,2,4. In the day-of-month field a wrapping
// range wraps after 31, whatever the length of the month, and a/n starts
// again at a in every month (1/7 fires on the 1st, 8th, 15th, 22nd and 29th).
// In the day-of-week field * and a/n run from 0 to 6.
//
// A step must be at least 1 and no larger than the field's maximum value
// (59 for minutes); a larger step, a zero step, a value out of range, an
// empty list element, a wrong number of fields and any other unexpected
// text are parse errors that carry the byte offset of the offending term.
//
// # Day of month and day of week
//
// ? may be used alone in the day-of-month or day-of-week field and means the
// same as *. The following Quartz extensions are accepted:
//
//	L     (day-of-month) the last day of the month
//	L-n   (day-of-month) n days before the last day of the month (n in 0-30)
//	nW    (day-of-month) the weekday (Monday to Friday) nearest to day n of the
//	      month, never crossing into another month: if n is a Saturday the
//	      Friday before is used, unless that is in the previous month, in which
//	      case the Monday after; if n is a Sunday the Monday after is used,
//	      unless that is in the next month, in which case the Friday before.
//	      nW does not fire in a month with fewer than n days.
//	LW    (day-of-month) the last weekday of the month
//	dL    (day-of-week) the last weekday d of the month (5L: last Friday)
//	d#k   (day-of-week) the k-th weekday d of the month, k in 1-5 (MON#2:
//	      the second Monday); a fifth occurrence that a month does not have
//	      simply does not fire in that month
//
// These terms may be mixed with ordinary terms in a list; they cannot take a
// step.
//
// If the day-of-month or the day-of-week field begins with * (or is ?), a day
// must match both fields; if both fields are restricted, a day matches when
// it matches either of them (the Vixie cron rule). So "0 0 1 * MON" fires on
// the 1st of every month and on every Monday, while "0 0 */2 * MON" fires on
// Mondays that fall on an odd day of the month.
//
// # Descriptors
//
//	@yearly, @annually  0 0 1 1 *
//	@monthly            0 0 1 * *
//	@weekly             0 0 * * 0
//	@daily, @midnight   0 0 * * *
//	@hourly             0 * * * *
//	@every <duration>   a fixed interval, written as for time.ParseDuration,
//	                    of at least one second
//
// Descriptors are case-insensitive. An @every expression is an interval, not a
// calendar schedule: [Expr.Every] reports its duration, and [Expr.Next]
// returns the next multiple of the duration since the Unix epoch.
//
// # Time zones and daylight saving time
//
// A calendar expression is evaluated against the wall clock of the location
// passed to [Expr.Next]; the result is an instant. An expression is a
// fixed-time expression when neither its minute field nor its hour field
// begins with * (the seconds field does not matter; @yearly, @monthly,
// @weekly and @daily are fixed-time, @hourly is not).
//
// For a fixed-time expression, a matching wall time that a spring-forward
// transition skips fires once, at the first instant after the gap (the
// transition instant), and a matching wall time that occurs twice because of
// a fall-back transition fires once, at its first occurrence.
//
// Any other expression fires at every matching wall time that really exists:
// in both passes of a repeated hour, and not at all for wall times skipped by
// a gap.
//
// Two matching wall times that map to the same instant are a single firing.
// Every computed instant is checked by converting it back to wall time, so the
// rules hold for transitions of any size and at any time of day, including
// 30-minute transitions, transitions at midnight and negative DST.
//
// An expression that can never fire, such as "0 0 30 2 *", is rejected by
// [Parse] with an error that matches [ErrNeverFires].
package cron
