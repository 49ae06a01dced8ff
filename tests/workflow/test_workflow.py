"""The Snakemake workflow: lint, dry runs (paper config, SLURM profile), a full run of the test
config validated against the result schemas, bit-for-bit reruns, and bad-config errors."""

import json
import re

import pandas as pd
import pytest
import yaml

from .runs import (
    OTHER_RUNS,
    ROOT,
    assert_same_results,
    empty_sections,
    run_test_config,
    snakemake,
    tables_fit_the_page,
    workflow_copy,
)

pytestmark = pytest.mark.workflow


def test_lint():
    proc = snakemake("--lint")
    assert "good condition" in proc.stdout + proc.stderr


def capped_replications(node, most: int):
    """A copy of a config with every `replications` above `most` set to `most`."""
    if isinstance(node, dict):
        return {k: min(v, most) if k == "replications" else capped_replications(v, most) for k, v in node.items()}
    return [capped_replications(v, most) for v in node] if isinstance(node, list) else node


@pytest.fixture(scope="module")
def paper_dry_run(tmp_path_factory):
    # One dry run of the paper config through the SLURM profile: it plans the same jobs as a
    # local dry run and also prints each job's resources. Every design keeps its conditions,
    # methods and resources but runs two replications (the whole config's 10,683-job DAG takes
    # 52 s to build on 2 cores; every replication adds the same rules with another rep wildcard).
    cfg = capped_replications(yaml.safe_load((ROOT / "config" / "paper.yaml").read_text()), 2)
    path = tmp_path_factory.mktemp("paper") / "paper_2_replications.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return snakemake(
        "-n",
        "--workflow-profile",
        "workflow/profiles/slurm",
        "--executor",
        "slurm",
        "--jobs",
        "10",
        "--configfile",
        str(path),
    )


def test_dry_run_paper_config(paper_dry_run):
    proc = paper_dry_run
    assert "fit_reference" in proc.stdout and "fit_amortized_ifa" in proc.stdout
    for study in ("rb_imputation", "amortized_ifa"):  # one report rule serves every study
        assert f"results/reports/{study}.html" in proc.stdout
    # the VIBO study's GRM on the real RWA data: its conditions read the prepared data set, every
    # method is fitted to them, and the real-data tables rule (no truth) aggregates them
    assert re.search(
        r"^\s+wildcards: design=rwa_real_grm, missing=mcar20, method=vibo_one_prior, block=0$", proc.stdout, flags=re.M
    )
    # one entry per job; the per-replication data jobs are printed indented, as members of group
    # jobs (SLURM profile)
    jobs = re.split(r"^[ \t]*(?=rule \w+:$)", proc.stdout, flags=re.M)
    wanted = re.compile(r"^[ \t]+wildcards: design=rwa_real_grm, missing=mcar10, rep=1$", flags=re.M)
    block = [j for j in jobs if j.startswith("rule vibo_simulate:") and wanted.search(j)]
    assert len(block) == 1 and "input: data/processed/rwa_real/responses.parquet" in block[0]
    assert "results/vibo/rwa_real_grm/agreement.csv" in proc.stdout


def dry_run_jobs(output: str) -> list[tuple[str, dict]]:
    """(rule, resources) of every job a dry run prints."""
    jobs = []
    for block in re.split(r"^(?=(?:local)?rule \w+:$)", output, flags=re.M):
        head = re.match(r"(?:local)?rule (\w+):$", block, flags=re.M)
        if head is None:
            continue
        line = re.search(r"^\s+resources: (.*)$", block, flags=re.M)
        pairs = (item.split("=", 1) for item in line.group(1).split(", ")) if line else ()
        jobs.append((head.group(1), {key: value for key, value in pairs}))
    return jobs


def test_dry_run_through_slurm_profile(paper_dry_run):
    jobs = dry_run_jobs(paper_dry_run.stdout)
    fits = [(rule, res) for rule, res in jobs if rule.startswith("fit_")]
    assert {"fit_reference", "fit_imputation_model", "fit_objective", "fit_amortized_ifa"} <= {r for r, _ in fits}
    # every fitting job asks SLURM for a GPU and for more than the defaults
    assert all(res.get("gpu") == "1" and int(res["cpus_per_task"]) > 1 for _, res in fits), sorted(
        {rule for rule, res in fits if res.get("gpu") != "1"}
    )
    assert all("gpu" not in res for rule, res in jobs if not rule.startswith("fit_"))


def test_failed_job_writes_its_traceback_to_the_log(tmp_path):
    # a real-data set whose file has an out-of-range response code: prepare_rwa must fail and
    # its log must say why (the exception's type and message, with the traceback)
    (tmp_path / "run").mkdir()
    run = workflow_copy(tmp_path / "run")
    items = [f"Q{i}" for i in range(1, 23)]
    rows = [[str(1 + (p + i) % 9) for i in range(22)] for p in range(5)]
    rows[3][4] = "12"
    (tmp_path / "bad.csv").write_text("\n".join(",".join(r) for r in [items, *rows]) + "\n")
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["datasets"]["rwa_bad"] = {"source": "rwa", "url": str(tmp_path / "bad.csv")}
    (run / "bad.yaml").write_text(yaml.safe_dump(cfg))
    proc = snakemake(
        "data/processed/rwa_bad/responses.parquet", "--cores", "1", "--configfile", "bad.yaml", cwd=run, check=False
    )
    assert proc.returncode != 0
    log = (run / "logs/data/rwa_bad.prepare.log").read_text()
    assert "Traceback (most recent call last)" in log
    assert re.search(r"^\S*DataFormatError: .*out of range", log, flags=re.M), log
    # the message names the user's file, with the line and column of the bad cell, not our cached copy
    assert f"{tmp_path / 'bad.csv'}: line 5, column 'Q5': code 12 out of range" in log, log
    assert not (run / "data/processed/rwa_bad/responses.parquet").exists()


@pytest.mark.parametrize(
    "text, message",
    [
        # one value the schema refuses, one only the studies' parsers can judge: the Snakefile runs
        # both checks before any job; tests/unit/test_config_validation.py holds the other bad values,
        # put through the same three steps in-process
        ("bogus: 1\n", "config key 'bogus': unknown key"),
        (
            "studies: {rb_imputation: {dataset: rwa_sim, missing: mcar150}}\n",
            "config key 'studies.rb_imputation.missing': 'mcar150' — the rate 150% is outside [0, 100)",
        ),
    ],
)
def test_bad_config_stops_before_any_job_naming_the_key(tmp_path, text, message):
    base = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    base.update(yaml.safe_load(text))
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml.safe_dump(base))
    proc = snakemake("-n", "--configfile", str(cfg), check=False)
    assert proc.returncode != 0
    # one line, the last on the screen, naming the config file given, without a traceback
    assert proc.stderr.strip().splitlines()[-1].startswith(f"{cfg}: {message}"), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "common.smk" not in proc.stderr, proc.stderr[-2000:]
    assert "jobid" not in proc.stdout  # stopped at parsing, before any job was planned


def test_outputs_follow_the_schemas(local_run, schema):
    run = local_run
    sidecar = json.loads((run / "data/processed/rwa_sim/responses.json").read_text())
    schema("responses").validate(sidecar)
    fit = run / "results/rb_imputation/rwa_sim/reference"
    records = sorted((run / "results/rb_imputation").rglob("fit.json"))
    # the reference plus one fit per condition (zero_fill, naive_average_M2, rao_blackwell_M2,
    # exact_marginal) and replication (two, each condition's fitted in one block, in whose
    # folder its job wrote them: nowhere else)
    blocks = [r for r in records if r.parent.parent.name == "block0" and r.parent.parent.parent.name == "blocks"]
    assert len(records) == 1 + 4 * 2 and len(blocks) == 4 * 2
    row_schema = schema("estimates")
    for record in records:
        schema("fit_record").validate(json.loads(record.read_text()))
        for row in pd.read_csv(record.parent / "estimates.csv").to_dict("records"):
            row_schema.validate(row)
    # the Gibbs sampler's fits (both treatments of missing cells) follow the same schemas, with
    # the sampler's diagnostics in the record and truth beside every estimate
    # (two replications of each method, fitted in one block, in whose folder its job wrote them)
    gibbs = sorted((run / "results/gibbs_2pno/tiny").rglob("fit.json"))
    assert [r.relative_to(run / "results/gibbs_2pno/tiny").parts[1:] for r in gibbs] == [
        (method, "blocks", "block0", f"rep{rep}", "fit.json") for method in ("gibbs", "gibbs_omit") for rep in (0, 1)
    ]
    for record in gibbs:
        rec = json.loads(record.read_text())
        schema("fit_record").validate(rec)
        assert rec["n_chains"] == 2 and rec["timing"]["item_min_ess_per_second"] > 0
        assert rec["block"]["size"] == 2 and rec["block"]["position"] == rec["replication"]
        est = pd.read_csv(record.parent / "estimates.csv")
        for row in est.to_dict("records"):
            row_schema.validate(row)
        assert est["true"].notna().all() and (est["q5"] <= est["mean"]).all() and (est["mean"] <= est["q95"]).all()
        schema("global_fit").validate(json.loads((record.parent / "global_fit.json").read_text()))
    # model checks beside every fit of vibo, gibbs_2pno and dcm_bbvi (the mixture example has none)
    for study in ("vibo", "gibbs_2pno", "dcm_bbvi"):
        fits = [r for r in (run / "results" / study).rglob("fit.json") if "mixture" not in r.parts]
        assert fits, study
        for record in fits:
            schema("global_fit").validate(json.loads((record.parent / "global_fit.json").read_text()))
        html = (run / "results" / "reports" / f"{study}.html").read_text()
        assert "Model checks of every fit" in html and "No model checks in this run" not in html, study
    gibbs_html = (run / "results/reports/gibbs_2pno.html").read_text()
    assert "Model checks of every fit" in gibbs_html and "No model checks in this run" not in gibbs_html
    responses = pd.read_parquet(run / "data/processed/rwa_sim/responses.parquet")
    assert responses.shape == (sidecar["n_persons"], len(sidecar["items"]))
    import arviz as az

    idata = az.from_netcdf(fit / "posterior.nc")
    assert set(idata.posterior.data_vars) == {"discrimination", "base_difficulty", "increments"}
    # the model checks beside the reference fit, and its item sds corrected (VI's own kept)
    for row in pd.read_csv(fit / "item_fit.csv").to_dict("records"):
        schema("item_fit").validate({k: (v if v == v else None) for k, v in row.items()})
    for row in pd.read_csv(fit / "person_fit.csv").to_dict("records"):
        schema("person_fit").validate({k: (v if v == v else None) for k, v in row.items()})
    schema("global_fit").validate(json.loads((fit / "global_fit.json").read_text()))
    reference = json.loads((fit / "fit.json").read_text())
    assert reference["item_uncertainty"]["method"] == "laplace_at_marginal_mode" and "khat" in reference["psis"]
    html = (run / "results/reports/rb_imputation.html").read_text()
    assert "Recovery of the true parameters" in html and "image/png" in html
    assert "Can the reference fit be trusted?" in html and "items flagged" in html
    pngs = sorted((run / "results/rb_imputation/rwa_sim/figures").glob("*.png"))
    assert [p.name for p in pngs] == ["estimates.png", "loss.png"]
    comparison = run / "results/rb_imputation/rwa_sim/mcar15"
    pngs += sorted((comparison / "figures").glob("*.png"))
    assert len(pngs) == 6 and all(p.stat().st_size > 5000 for p in pngs)
    summary = pd.read_csv(comparison / "summary.csv")
    # one row per condition and replication (two replications in the test config)
    assert sorted(set(summary["condition"])) == ["exact_marginal", "naive_average_M2", "rao_blackwell_M2", "zero_fill"]
    assert summary["discrimination_rmse_vs_complete_data"].notna().all()
    assert "What the numbers say" in html


def test_rerun_is_bit_for_bit_identical(local_run, tmp_path, compilation_cache):
    # the second run is the SLURM test's run where there was one (that module runs first; it
    # runs two of the five studies, whose files are compared), else a local run of the whole
    # config: either way a second, independent run. test_resume reruns part of rb_imputation;
    # the next test reruns everything (slow).
    if OTHER_RUNS:
        second, studies = OTHER_RUNS[0]
    else:
        second, studies = run_test_config(tmp_path / "run_b", compilation_cache), None
    assert assert_same_results(local_run, second, studies=studies) >= 10


def test_more_replications_simulate_only_the_new_ones(local_run):
    # a data job's rerun trigger is its design without the keys that plan the fits
    # (common.smk's data_design): one more replication of a design plans that replication's data
    # and the block that now holds it, and resimulates none of the finished replications
    overlay = local_run / "more_replications.yaml"
    overlay.write_text(
        yaml.safe_dump(
            {
                "studies": {
                    "vibo": {"designs": {"tiny_grm": {"replications": 2}}},
                    "gibbs_2pno": {"designs": {"tiny": {"replications": 3}}},
                    "amortized_ifa": {"designs": {"mixture_p1": {"replications": 2}}},
                }
            }
        )
    )
    plan = snakemake("-n", "--configfile", "config/test.yaml", overlay.name, cwd=local_run).stdout
    blocks = re.split(r"^(?=rule )", plan, flags=re.M)
    jobs = (re.match(r"rule (\w+):\n(?:.*\n)*?\s+wildcards: (.*)", block) for block in blocks)
    simulated = {job.groups() for job in jobs if job and job.group(1).endswith("_simulate")}
    assert simulated == {
        ("vibo_simulate", "design=tiny_grm, missing=mcar20, rep=1"),
        ("gibbs_simulate", "design=tiny, missing=mcar20, rep=2"),
        ("ifa_simulate", "design=mixture_p1, rep=1"),
    }, plan[-3000:]
    # the blocks that hold the new replications are refitted, the other designs' are not
    assert "wildcards: design=tiny_grm, missing=mcar20, method=vibo_one_prior, block=0" in plan
    assert "design=tiny, missing=mcar20, method=vibo_one_prior" not in plan


@pytest.mark.slow
def test_a_second_run_of_the_whole_config_is_bit_for_bit_identical(local_run, tmp_path, compilation_cache):
    second = run_test_config(tmp_path / "run_b", compilation_cache)
    assert assert_same_results(local_run, second) >= 10


def test_amortized_ifa_outputs_follow_the_schemas(local_run, schema):
    run = local_run
    base = run / "results/amortized_ifa"
    records = sorted(base.rglob("fit.json"))
    # test.yaml: normal (two replications, one block) and mixture_p1 (one replication), one R,
    # and the exploratory ipip scree over P = 1, 2, each fitted by IWAE and IWAVB; every fit
    # in rep<r>/ of its block's folder, where its job wrote it
    assert len(records) == 2 * (2 + 1 + 2)
    assert all(r.parent.parent.parent.name == "blocks" for r in records), records
    record_schema, row_schema = schema("fit_record"), schema("estimates")
    for record in records:
        rec = json.loads(record.read_text())
        record_schema.validate(rec)
        assert rec["study"] == "amortized_ifa" and rec["condition"] == record.parts[-5]
        est = pd.read_csv(record.parent / "estimates.csv")
        for row in est.to_dict("records"):
            row_schema.validate(row)
        assert {"loading", "intercept"} <= set(est.parameter)
        assert pd.read_csv(record.parent / "loss.csv")["loss"].notna().all()
    sidecar = json.loads((run / "data/processed/amortized_ifa/normal/rep0/holdout.json").read_text())
    schema("responses").validate(sidecar)
    for design, replications in (("normal", 2), ("mixture_p1", 1)):
        fits = pd.read_csv(base / design / "fits.csv")
        assert (
            sorted(fits["method"]) == ["iwae"] * replications + ["iwavb"] * replications
            and fits["loglik_independent"].notna().all()
        )
        assert fits["loading_mse"].notna().all()
        mse = pd.read_csv(base / design / "parameter_mse.csv")
        assert {"loading", "intercept"} <= set(mse["parameter"]) and (mse["mse"] >= 0).all()
        assert len(pd.read_csv(base / design / "latent.csv")) > 0
        pngs = sorted((base / design / "figures").glob("*.png"))
        assert [p.name for p in pngs] == ["latent.png", "loglik.png", "mse.png", "timings.png"]
        assert all(p.stat().st_size > 5000 for p in pngs)
    assert set(pd.read_csv(base / "mixture_p1/latent_density.csv")["latent"]) == {"mixture"}
    scree = pd.read_csv(base / "ipip/scree.csv")
    assert sorted(zip(scree["method"], scree["n_factors"])) == [("iwae", 1), ("iwae", 2), ("iwavb", 1), ("iwavb", 2)]
    assert [p.name for p in sorted((base / "ipip/figures").glob("*.png"))] == [
        "loadings.png",
        "scree.png",
        "timings.png",
    ]
    html = (run / "results/reports/amortized_ifa.html").read_text()
    assert "Which of the paper" in html and "image/png" in html and "Traceback" not in html


def test_snakemake_report_shows_every_figure_with_its_caption(local_run, tmp_path):
    run = local_run
    report = tmp_path / "report.html"
    snakemake("--report", str(report), "--configfile", "config/test.yaml", cwd=run)
    html = report.read_text()
    results = json.loads(re.search(r"var results = (\{.*?\});\s*</script>", html, flags=re.S).group(1))
    figures = sorted(str(p.relative_to(run)) for p in (run / "results").rglob("*.png"))
    assert sorted(results) == figures
    captions = {" ".join(p.read_text().split()[:6]) for p in (ROOT / "workflow" / "report").glob("*.rst")}
    shown = set()
    for path, entry in results.items():
        assert entry["mime_type"] == "image/png" and entry["data_uri"].startswith("data:image/png"), path
        text = " ".join(re.sub(r"<[^>]+>", " ", entry["caption"]).split())
        assert any(c in text for c in captions), (path, text)
        shown |= {c for c in captions if c in text}
    # every figure of the test config is in the report: rb_imputation's six, amortized_ifa's 4 + 4 + 3,
    # vibo's 3 per design (the 2PL and the GRM), dcm_bbvi's 4, gibbs_2pno's 5 of its design + 1 of the mixture;
    # every caption is shown but that of a real-data vibo design's figure (the test config reads no real data)
    real_only = {" ".join((ROOT / "workflow" / "report" / "vibo_agreement.rst").read_text().split()[:6])}
    assert len(results) == 6 + 4 + 4 + 3 + 3 * 2 + 4 + 6 and shown == captions - real_only


def test_every_report_embeds_its_figures(local_run):
    # A figure a notebook draws reaches the HTML as an image, once, never as its text stand-in
    # ("<Figure size 720x340 with 2 Axes>", what a notebook shows of a figure when matplotlib was
    # switched to a file-only backend before the notebook's own could take over).
    reports = sorted((local_run / "results" / "reports").glob("*.ipynb"))
    assert len(reports) == 5
    for notebook in reports:
        cells = json.loads(notebook.read_text())["cells"]
        outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
        texts = ["".join(o.get("data", {}).get("text/plain", "")) for o in outputs]
        stand_ins = [t for t in texts if t.startswith("<Figure size")]
        images = sum("image/png" in o.get("data", {}) for o in outputs)
        assert not stand_ins, (notebook.name, stand_ins)
        assert images >= 4, (notebook.name, images)  # each report of the test config draws four or more
        html = notebook.with_suffix(".html").read_text()
        assert "&lt;Figure size" not in html and html.count("data:image/png") >= images, notebook.name


def test_no_report_section_is_empty_and_every_table_fits_the_page(local_run):
    # Every section of every report that runs code shows something (a figure, a table or a
    # sentence saying why there is none): gibbs_2pno's mixture section was once left empty by a
    # parameter compared with the wrong type. Tables scroll inside the page, and no cell is cut.
    reports = sorted((local_run / "results" / "reports").glob("*.ipynb"))
    assert len(reports) == 5
    problems = {n.name: empty_sections(n) + tables_fit_the_page(n.with_suffix(".html").read_text()) for n in reports}
    assert not any(problems.values()), problems
    gibbs = (local_run / "results/reports/gibbs_2pno.html").read_text()
    assert "The mixture example" in gibbs and "No mixture example in this run" not in gibbs


@pytest.mark.parametrize("study", ["rb_imputation", "amortized_ifa", "vibo", "gibbs_2pno", "dcm_bbvi"])
def test_a_reproduction_page_builds_from_the_run_s_own_tables(local_run, tmp_path, study):
    # The page generator on real (tiny) study outputs: every table it keeps is there, every claim
    # gets a verdict, and its figures are written.
    from bayesirt.studies import reproduction

    run = {"command": "a test", "config": "config/test.yaml", "commit": "test", "machine": "test", "sittings": []}
    data = reproduction.collect(study, local_run / "results" / study, tmp_path / "data" / study, run)
    page = reproduction.render(study, data, tmp_path / "pages")
    claims = reproduction.study_module(study).claims(reproduction.read_tables(study, data)[0])
    assert claims and all(c.verdict in reproduction.VERDICTS for c in claims)
    text = page.read_text()
    assert sum(line.startswith("| ") and "| **" in line for line in text.splitlines()) == len(claims)
    figures = sorted((tmp_path / "pages" / study).glob("*.png"))
    assert figures and all(f"]({study}/{f.name})" in text for f in figures)
