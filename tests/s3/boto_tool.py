#!/usr/bin/python3
"""The independent S3 client of the object-storage tests (Debian's python3-boto3): writes fixtures
and checks what rectrain wrote, so rectrain is never checked against itself.

Usage: boto_tool.py ENDPOINT COMMAND ARGS...
  put BUCKET KEY FILE          upload FILE (boto3's managed transfer: multipart when large)
  put-bytes BUCKET KEY TEXT    upload TEXT
  put-many BUCKET PREFIX N FILE   upload FILE as PREFIX00000..PREFIX{N-1} (threads)
  sync-up DIR BUCKET PREFIX    upload every file under DIR to PREFIX/relative-path
  get BUCKET KEY FILE          download to FILE
  sync-down BUCKET PREFIX DIR  download every object under PREFIX into DIR
  list BUCKET PREFIX           JSON [[key, size, etag], ...] over all pages
  md5 BUCKET KEY               hex MD5 of the object's bytes
  delete BUCKET KEY            delete one object
  uploads BUCKET PREFIX        JSON [[key, upload_id], ...] of the incomplete multipart uploads
                               (ListMultipartUploads), or "error CODE HTTP-STATUS" when the
                               server refuses the call
  abort BUCKET KEY UPLOAD_ID   AbortMultipartUpload: "aborted", or "error CODE HTTP-STATUS"
  get-throughput BUCKET KEY REPEAT   MB/s of REPEAT whole-object GETs (the server's ceiling)
  get-many BUCKET PREFIX THREADS     seconds to list PREFIX and GET every object under it with
                                     THREADS threads (the server's ceiling for many small objects)
"""
import concurrent.futures
import hashlib
import json
import os
import sys
import time

import boto3
import botocore.config
import botocore.exceptions


def client(endpoint):
    return boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1",
        aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER",
        config=botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 10}))


def list_all(s3, bucket, prefix):
    out = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents", []):
            out.append([o["Key"], o["Size"], o["ETag"]])
    return out


def refused(e):
    err = e.response.get("Error", {})
    return "error %s %s" % (err.get("Code"), e.response.get("ResponseMetadata", {}).get("HTTPStatusCode"))


def main(argv):
    endpoint, cmd, args = argv[1], argv[2], argv[3:]
    s3 = client(endpoint)
    if cmd == "put":
        s3.upload_file(args[2], args[0], args[1])
    elif cmd == "put-bytes":
        s3.put_object(Bucket=args[0], Key=args[1], Body=args[2].encode())
    elif cmd == "put-many":
        bucket, prefix, n, path = args[0], args[1], int(args[2]), args[3]
        body = open(path, "rb").read()
        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            list(ex.map(lambda i: s3.put_object(Bucket=bucket, Key="%s%05d" % (prefix, i), Body=body), range(n)))
    elif cmd == "sync-up":
        root, bucket, prefix = args
        for d, _, files in os.walk(root):
            for f in sorted(files):
                full = os.path.join(d, f)
                s3.upload_file(full, bucket, prefix.rstrip("/") + "/" + os.path.relpath(full, root))
    elif cmd == "get":
        s3.download_file(args[0], args[1], args[2])
    elif cmd == "sync-down":
        bucket, prefix, root = args
        for key, _, _ in list_all(s3, bucket, prefix):
            dst = os.path.join(root, key[len(prefix):].lstrip("/"))
            os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
            s3.download_file(bucket, key, dst)
    elif cmd == "list":
        print(json.dumps(list_all(s3, args[0], args[1])))
    elif cmd == "md5":
        print(hashlib.md5(s3.get_object(Bucket=args[0], Key=args[1])["Body"].read()).hexdigest())
    elif cmd == "delete":
        s3.delete_object(Bucket=args[0], Key=args[1])
    elif cmd == "uploads":
        try:
            pages = list(s3.get_paginator("list_multipart_uploads").paginate(Bucket=args[0], Prefix=args[1]))
            print(json.dumps([[u["Key"], u["UploadId"]] for p in pages for u in p.get("Uploads", [])]))
        except botocore.exceptions.ClientError as e:
            print(refused(e))
    elif cmd == "abort":
        try:
            s3.abort_multipart_upload(Bucket=args[0], Key=args[1], UploadId=args[2])
            print("aborted")
        except botocore.exceptions.ClientError as e:
            print(refused(e))
    elif cmd == "get-throughput":
        bucket, key, repeat = args[0], args[1], int(args[2])
        total, start = 0, time.time()
        for _ in range(repeat):
            total += len(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        print("%.1f" % (total / (time.time() - start) / 1e6))
    elif cmd == "get-many":
        bucket, prefix, threads = args[0], args[1], int(args[2])
        start = time.time()
        keys = [k for k, _, _ in list_all(s3, bucket, prefix)]
        with concurrent.futures.ThreadPoolExecutor(threads) as ex:
            list(ex.map(lambda k: s3.get_object(Bucket=bucket, Key=k)["Body"].read(), keys))
        print("%.2f" % (time.time() - start))
    else:
        print("unknown command " + cmd, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
