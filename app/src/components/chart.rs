//! Charts drawn as inline SVG on the server, readable without JavaScript, each followed by the
//! same numbers as a table. The geometry is pure functions of the numbers (unit-tested); the
//! components only place what they compute. No chart library, nothing in wasm but markup.

use leptos::prelude::*;

/// The drawing area of a chart and its margins, in SVG user units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    /// Total width.
    pub width: f64,
    /// Total height.
    pub height: f64,
    /// Room for the value axis.
    pub left: f64,
    /// Room above.
    pub top: f64,
    /// Room for the labels below.
    pub bottom: f64,
}

impl Frame {
    /// The frame of the day charts.
    pub const DAYS: Frame = Frame {
        width: 640.0,
        height: 220.0,
        left: 40.0,
        top: 10.0,
        bottom: 24.0,
    };

    fn plot_width(&self) -> f64 {
        self.width - self.left - 8.0
    }

    fn plot_height(&self) -> f64 {
        self.height - self.top - self.bottom
    }

    /// The y of value `v` on an axis from 0 to `top`.
    fn y(&self, v: i64, top: i64) -> f64 {
        self.top + self.plot_height() * (1.0 - v as f64 / top.max(1) as f64)
    }

    /// The x of the left edge of column `i` of `n`, and the column's width.
    fn column(&self, i: usize, n: usize) -> (f64, f64) {
        let slot = self.plot_width() / n.max(1) as f64;
        (self.left + slot * i as f64, slot)
    }
}

/// A rectangle, rounded to one decimal for compact markup.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    /// Left.
    pub x: f64,
    /// Top.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// The smallest of 1, 2, 5, 10, 20, 50, … at or above `max` (at least 1): the axis top.
pub fn nice_max(max: i64) -> i64 {
    let mut step = 1i64;
    loop {
        for m in [1, 2, 5] {
            if step.saturating_mul(m) >= max {
                return step.saturating_mul(m);
            }
        }
        step = step.saturating_mul(10);
    }
}

/// Stacked columns, one per day: for each series (bottom first), the rectangle of each day.
pub fn stacked_columns(frame: &Frame, series: &[Vec<i64>], top: i64) -> Vec<Vec<Rect>> {
    let days = series.iter().map(Vec::len).max().unwrap_or(0);
    let mut base = vec![0i64; days];
    series
        .iter()
        .map(|values| {
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let (x, slot) = frame.column(i, days);
                    let below = base[i];
                    base[i] += v.max(&0);
                    let y = frame.y(base[i], top);
                    Rect {
                        x: round1(x + slot * 0.15),
                        y: round1(y),
                        w: round1(slot * 0.7),
                        h: round1(frame.y(below, top) - y),
                    }
                })
                .collect()
        })
        .collect()
}

/// The points of a line through `values` (one per column centre), as SVG `points`.
pub fn polyline(frame: &Frame, values: &[i64], top: i64) -> String {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let (x, slot) = frame.column(i, values.len());
            format!(
                "{},{}",
                round1(x + slot / 2.0),
                round1(frame.y(*v.max(&0), top))
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The length of a horizontal bar for `v` on a scale to `max` over `width`.
pub fn bar_length(v: i64, max: i64, width: f64) -> f64 {
    round1(width * v.max(0) as f64 / max.max(1) as f64)
}

/// Seconds in words: `45 s`, `12 min`, `3.5 h`, `2.0 d`.
pub fn duration_words(secs: i64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3_600 => format!("{} min", s / 60),
        s if s < 86_400 => format!("{:.1} h", s as f64 / 3_600.0),
        s => format!("{:.1} d", s as f64 / 86_400.0),
    }
}

/// `MM-DD` of a `YYYY-MM-DD` day, for axis labels.
fn short_day(day: &str) -> String {
    day.get(5..).unwrap_or(day).to_owned()
}

/// One series of a day chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// Its name in the legend and table.
    pub label: &'static str,
    /// CSS class that colours it.
    pub class: &'static str,
    /// One value per day.
    pub values: Vec<i64>,
}

/// The value axis: gridlines at 0, half and the top, with their numbers.
fn axis(frame: Frame, top: i64) -> impl IntoView {
    // Half-way only where it is a whole number of the axis' own steps.
    let ticks = if top % 2 == 0 {
        vec![0, top / 2, top]
    } else {
        vec![0, top]
    };
    ticks
        .into_iter()
        .map(|v| {
            let y = round1(frame.y(v, top));
            view! {
                <line class="grid" x1=frame.left x2=frame.width - 8.0 y1=y y2=y></line>
                <text class="tick" x=frame.left - 4.0 y=y + 4.0 text-anchor="end">{v}</text>
            }
        })
        .collect_view()
}

/// Labels under every fifth day column.
fn day_labels(frame: Frame, days: &[String]) -> impl IntoView + use<> {
    let n = days.len();
    days.iter()
        .enumerate()
        .filter(|(i, _)| i % 5 == 0 || *i + 1 == n)
        .map(|(i, d)| {
            let (x, slot) = frame.column(i, n);
            view! {
                <text class="tick" x=round1(x + slot / 2.0) y=frame.height - 6.0 text-anchor="middle">
                    {short_day(d)}
                </text>
            }
        })
        .collect_view()
}

/// The numbers of a day chart as a table, one row per day.
fn day_table(days: Vec<String>, series: Vec<Series>) -> AnyView {
    let heads = series
        .iter()
        .map(|s| view! { <th>{s.label}</th> })
        .collect_view();
    let rows = days
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let cells = series
                .iter()
                .map(|s| view! { <td class="num">{s.values.get(i).copied().unwrap_or(0)}</td> })
                .collect_view();
            view! { <tr><th scope="row">{d}</th>{cells}</tr> }
        })
        .collect_view();
    view! {
        <details class="chart-table">
            <summary>"Show the numbers"</summary>
            <table>
                <thead><tr><th>"Day"</th>{heads}</tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </details>
    }
    .into_any()
}

fn legend(items: &[(&'static str, &'static str)]) -> impl IntoView + use<> {
    let items = items
        .iter()
        .map(|(label, class)| {
            let class = format!("swatch {class}");
            view! { <li><span class=class></span>{*label}</li> }
        })
        .collect_view();
    view! { <ul class="legend">{items}</ul> }
}

/// Columns per day, series stacked (bottom first), with a legend and the table.
#[component]
pub fn DayColumns(
    /// What it shows.
    title: &'static str,
    /// `YYYY-MM-DD`, oldest first.
    days: Vec<String>,
    /// The stacked series.
    series: Vec<Series>,
    /// `data-testid` of the figure.
    testid: &'static str,
) -> impl IntoView {
    let frame = Frame::DAYS;
    let totals: Vec<i64> = (0..days.len())
        .map(|i| {
            series
                .iter()
                .map(|s| s.values.get(i).copied().unwrap_or(0))
                .sum()
        })
        .collect();
    let top = nice_max(totals.iter().copied().max().unwrap_or(0));
    let values: Vec<Vec<i64>> = series.iter().map(|s| s.values.clone()).collect();
    let bars = stacked_columns(&frame, &values, top)
        .into_iter()
        .zip(series.iter())
        .flat_map(|(rects, s)| rects.into_iter().map(move |r| (r, s.class)))
        .filter(|(r, _)| r.h > 0.0)
        .map(|(r, class)| view! { <rect class=class x=r.x y=r.y width=r.w height=r.h></rect> })
        .collect_view();
    let view_box = format!("0 0 {} {}", frame.width, frame.height);
    view! {
        <figure class="chart" data-testid=testid>
            <figcaption>{title}</figcaption>
            {legend(&series.iter().map(|s| (s.label, s.class)).collect::<Vec<_>>())}
            <svg viewBox=view_box role="img" aria-label=title>
                <title>{title}</title>
                {axis(frame, top)}
                {bars}
                {day_labels(frame, &days)}
            </svg>
            {day_table(days, series)}
        </figure>
    }
    .into_any()
}

/// One line over the days, with the table.
#[component]
pub fn DayLine(
    /// What it shows.
    title: &'static str,
    /// `YYYY-MM-DD`, oldest first.
    days: Vec<String>,
    /// The series.
    series: Series,
    /// `data-testid` of the figure.
    testid: &'static str,
) -> impl IntoView {
    let frame = Frame::DAYS;
    let top = nice_max(series.values.iter().copied().max().unwrap_or(0));
    let points = polyline(&frame, &series.values, top);
    let class = format!("line {}", series.class);
    let view_box = format!("0 0 {} {}", frame.width, frame.height);
    view! {
        <figure class="chart" data-testid=testid>
            <figcaption>{title}</figcaption>
            <svg viewBox=view_box role="img" aria-label=title>
                <title>{title}</title>
                {axis(frame, top)}
                <polyline class=class points=points fill="none"></polyline>
                {day_labels(frame, &days)}
            </svg>
            {day_table(days, vec![series])}
        </figure>
    }
    .into_any()
}

/// One bar of a [`HorizontalBars`] row: a value, its class and how it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bar {
    /// Value (its length).
    pub value: i64,
    /// CSS class.
    pub class: &'static str,
    /// Its words in the table (e.g. `4 min`).
    pub text: String,
}

/// Room right of the longest bar for its value.
const VALUE_ROOM: f64 = 64.0;

/// The SVG content of [`HorizontalBars`]: a label and its bars per row; and the drawing's size.
fn bar_rows(rows: &[(String, Vec<Bar>)]) -> (AnyView, f64, f64) {
    let (label_width, width, bar_height) = (160.0, 640.0, 10.0);
    let per_row = rows.iter().map(|(_, b)| b.len()).max().unwrap_or(1) as f64 * bar_height + 8.0;
    let height = per_row * rows.len() as f64 + 4.0;
    let max = rows
        .iter()
        .flat_map(|(_, b)| b.iter().map(|b| b.value))
        .max()
        .unwrap_or(0);
    let drawn = rows
        .iter()
        .enumerate()
        .map(|(i, (name, bars))| {
            let y0 = 4.0 + per_row * i as f64;
            let bars = bars
                .iter()
                .enumerate()
                .map(|(j, b)| {
                    let y = y0 + bar_height * j as f64;
                    let w = bar_length(b.value, max, width - label_width - VALUE_ROOM);
                    view! {
                        <rect class=b.class x=label_width y=y width=w height=bar_height - 1.0></rect>
                        <text class="value" x=label_width + w + 4.0 y=y + bar_height - 2.0>{b.text.clone()}</text>
                    }
                })
                .collect_view();
            view! {
                <text class="tick" x=label_width - 6.0 y=y0 + per_row / 2.0 text-anchor="end">{name.clone()}</text>
                {bars}
            }
        })
        .collect_view()
        .into_any();
    (drawn, width, height)
}

/// Rows of horizontal bars side by side (one bar per series), with the table.
#[component]
pub fn HorizontalBars(
    /// What it shows.
    title: &'static str,
    /// Column heads of the table: the row's name, then one per series.
    heads: Vec<&'static str>,
    /// `(name, bars)` per row.
    rows: Vec<(String, Vec<Bar>)>,
    /// `data-testid` of the figure.
    testid: &'static str,
    /// Shown when there are no rows.
    empty: &'static str,
) -> impl IntoView {
    if rows.is_empty() {
        return view! {
            <figure class="chart" data-testid=testid>
                <figcaption>{title}</figcaption>
                <p class="empty">{empty}</p>
            </figure>
        }
        .into_any();
    }
    let (drawn, width, height) = bar_rows(&rows);
    let table_rows = rows
        .iter()
        .map(|(name, bars)| {
            let cells = bars
                .iter()
                .map(|b| view! { <td class="num">{b.text.clone()}</td> })
                .collect_view();
            view! { <tr><th scope="row">{name.clone()}</th>{cells}</tr> }
        })
        .collect_view();
    let keys: Vec<(&'static str, &'static str)> = heads
        .iter()
        .skip(1)
        .copied()
        .zip(rows[0].1.iter().map(|b| b.class))
        .collect();
    let table_heads = heads.iter().map(|h| view! { <th>{*h}</th> }).collect_view();
    let view_box = format!("0 0 {width} {height}");
    view! {
        <figure class="chart" data-testid=testid>
            <figcaption>{title}</figcaption>
            {legend(&keys)}
            <svg viewBox=view_box role="img" aria-label=title>
                <title>{title}</title>
                {drawn}
            </svg>
            <details class="chart-table">
                <summary>"Show the numbers"</summary>
                <table>
                    <thead><tr>{table_heads}</tr></thead>
                    <tbody>{table_rows}</tbody>
                </table>
            </details>
        </figure>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(nice_max(0), 1);
        assert_eq!(nice_max(1), 1);
        assert_eq!(nice_max(3), 5);
        assert_eq!(nice_max(7), 10);
        assert_eq!(nice_max(11), 20);
        assert_eq!(nice_max(200), 200);
        assert_eq!(nice_max(201), 500);
    }

    #[test]
    fn stacked_columns_sit_on_each_other_and_fill_the_axis() {
        let f = Frame::DAYS;
        let rects = stacked_columns(&f, &[vec![1, 0], vec![1, 2]], 2);
        let bottom = f.height - f.bottom;
        // Day 0: the first series from the baseline to the middle, the second on top of it.
        assert_eq!(rects[0][0].y + rects[0][0].h, bottom);
        assert_eq!(rects[1][0].y + rects[1][0].h, rects[0][0].y);
        assert_eq!(rects[1][0].y, f.top);
        // Day 1: nothing in the first series, the full height in the second.
        assert_eq!(rects[0][1].h, 0.0);
        assert_eq!(rects[1][1].y, f.top);
        assert!(rects[0][1].x > rects[0][0].x);
    }

    #[test]
    fn a_line_passes_through_column_centres() {
        let f = Frame {
            width: 108.0,
            height: 110.0,
            left: 0.0,
            top: 0.0,
            bottom: 10.0,
        };
        assert_eq!(polyline(&f, &[0, 10], 10), "25,100 75,0");
        assert_eq!(bar_length(5, 10, 100.0), 50.0);
        assert_eq!(bar_length(0, 0, 100.0), 0.0);
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration_words(42), "42 s");
        assert_eq!(duration_words(600), "10 min");
        assert_eq!(duration_words(5_400), "1.5 h");
        assert_eq!(duration_words(172_800), "2.0 d");
        assert_eq!(short_day("2026-11-23"), "11-23");
    }
}
