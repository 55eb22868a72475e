# The UI's source files, relative to ui/ (CMake rebuilds the UI when one changes; no globs).
set(RECTRAIN_UI_SOURCES
  index.html
  vite.config.ts
  tsconfig.json
  src/main.ts
  src/api.ts
  src/dom.ts
  src/format.ts
  src/chart.ts
  src/style.css
  src/pages/runs.ts
  src/pages/compare.ts
  src/pages/run.ts
  src/pages/groups.ts
  src/pages/study.ts
  src/parcoords.ts
)
