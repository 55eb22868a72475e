import { defineConfig } from "vite";

// Relative asset URLs so the UI works under any path the server mounts it at.
export default defineConfig({
  base: "./",
  build: {
    outDir: "dist",
    target: "es2022",
    sourcemap: false,
    chunkSizeWarningLimit: 400,
  },
  server: {
    // `npm run dev` proxies the API to a running `rectrain ui` (default port 8080).
    proxy: { "/api": "http://127.0.0.1:8080", "/metrics": "http://127.0.0.1:8080" },
  },
});
