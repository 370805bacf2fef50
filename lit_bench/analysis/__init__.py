"""The report: run directories into tables, text and figures (``lit-bench report`` is its command line).

Read: ``load`` finds the runs and reads them through each sweep's cache (``parse``, ``eval_csv``, ``metrics_csv``,
``cache``); aggregate: ``summarize``, ``paired``, ``suite``, ``normalize``, ``reference``, with the statistics of
``lit_bench.stats``; draw: ``plot``, ``training``, ``suite_page``, ``hpo``, in one visual language (``style``,
``variants``, ``pdf_fonts``). The report itself: ``tables`` (what it reads, once), ``markdown`` (its text),
``figures`` (what each figure draws), ``pool`` (drawing and saving them, in one process or several), ``write`` (its
files in one folder).
"""
