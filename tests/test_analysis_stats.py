"""Per-group statistics of the analysis against numpy's own."""


def test_group_percentiles_equal_numpy_for_every_group_size_and_skip_nans():
    import numpy as np

    from glidein_tracing.analysis.stats import group_summary

    rng = np.random.default_rng(3)
    sizes = [0, 1, 2, 3, 4, 17, 1000]       # group 0 is empty
    codes = np.concatenate([np.full(n, g) for g, n in enumerate(sizes)])
    values = rng.lognormal(3, 1.5, len(codes))
    values[rng.random(len(codes)) < 0.05] = np.nan
    order = rng.permutation(len(codes))
    codes, values = codes[order], values[order]
    out = group_summary(codes, values, len(sizes))
    for g in range(len(sizes)):
        mine = values[(codes == g) & np.isfinite(values)]
        assert out["count"][g] == len(mine)
        for q in (50, 90, 99):
            expected = np.percentile(mine, q) if len(mine) else np.nan
            assert np.isclose(out[f"p{q}"][g], expected, rtol=1e-12, equal_nan=True), (g, q)
    overall = group_summary(codes, values, 1)
    assert np.isclose(overall["p90"][0], np.nanpercentile(values, 90), rtol=1e-12)
