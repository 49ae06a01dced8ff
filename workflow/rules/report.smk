# Report notebooks: jupytext source -> papermill (fills the parameters cell) -> HTML.


rule report_rb_imputation:
    input:
        notebook="notebooks/rb_imputation.py",
        results=report_inputs,
    output:
        notebook="results/reports/rb_imputation.ipynb",
        html="results/reports/rb_imputation.html",
    params:
        python=PYTHON,
        datasets=",".join(study_datasets("rb_imputation")),
        missing=config["studies"]["rb_imputation"]["missing"],
    log:
        "logs/reports/rb_imputation.log",
    conda:
        ENV
    shell:
        """
        (
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        {params.python} -m jupytext --to ipynb -o "$tmp/source.ipynb" {input.notebook}
        {params.python} -m papermill --cwd . "$tmp/source.ipynb" "$tmp/executed.ipynb" \
            -p datasets "{params.datasets}" -p missing "{params.missing}" -p results_dir results/rb_imputation
        {params.python} -m jupyter nbconvert --to html --output-dir "$tmp" "$tmp/executed.ipynb"
        mv "$tmp/executed.html" {output.html}
        mv "$tmp/executed.ipynb" {output.notebook}
        ) > {log} 2>&1
        """


rule report_amortized_ifa:
    input:
        notebook="notebooks/amortized_ifa.py",
        results=ifa_report_inputs,
    output:
        notebook="results/reports/amortized_ifa.ipynb",
        html="results/reports/amortized_ifa.html",
    params:
        python=PYTHON,
        confirmatory=",".join(ifa_designs("confirmatory")),
        exploratory=",".join(ifa_designs("exploratory")),
    log:
        "logs/reports/amortized_ifa.log",
    conda:
        ENV
    shell:
        """
        (
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        {params.python} -m jupytext --to ipynb -o "$tmp/source.ipynb" {input.notebook}
        {params.python} -m papermill --cwd . "$tmp/source.ipynb" "$tmp/executed.ipynb" \
            -p confirmatory "{params.confirmatory}" -p exploratory "{params.exploratory}" \
            -p results_dir results/amortized_ifa
        {params.python} -m jupyter nbconvert --to html --output-dir "$tmp" "$tmp/executed.ipynb"
        mv "$tmp/executed.html" {output.html}
        mv "$tmp/executed.ipynb" {output.notebook}
        ) > {log} 2>&1
        """
